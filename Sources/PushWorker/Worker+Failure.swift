import Foundation
import PushCore
import PushStore

/// Jobs that fail, and what a recorded batch adds to the metrics.
extension Worker {
    /// Sets a job that can never succeed aside at once (discarded with `reason`), never sending it.
    func setAside(_ job: ClaimedJob, _ reason: String, store: QueueStore) {
        metrics.dbErrors.increment()
        let state: String
        do {
            state = try store.jobDiscard(job.lease, error: reason) ? JobState.discarded.rawValue : "lease_lost"
            keeper.release(job.id)
        } catch {
            state = "unwritten"
        }
        log.error("job.set_aside", ["job_id": job.id, "notification_id": PrefixedID.format(.notification, job.notification.id), "state": state,
                                    "error": reason.prefix(300)])
    }

    /// A job whose processing failed as a whole (a store call failed for it): retried after
    /// `JobRetryPolicy`'s delay, and set aside (discarded) once out of attempts. A broken session
    /// leaves the job running under this lease: given back at the end of the claim, or rescued when
    /// the lease expires.
    func handleFailure(_ job: ClaimedJob, _ error: Error, store: QueueStore) {
        metrics.dbErrors.increment()
        let retryAt = Date().addingTimeInterval(config.jobRetryPolicy.delay(afterAttempt: job.attempt))
        let state: String
        do {
            // nil: the lease token no longer matches (another worker holds the job now).
            state = try store.jobFail(job.lease, error: String(describing: error), retryAt: retryAt)?.rawValue ?? "lease_lost"
            keeper.release(job.id)
        } catch {
            state = "unwritten"
        }
        log.error("job.failed", ["job_id": job.id, "attempt": job.attempt, "state": state,
                                 "error": String(describing: error).prefix(300)])
    }

    /// Counts a recorded batch: deliveries by provider, status and code; refund rows written;
    /// credential sets marked invalid by kind.
    func count(_ records: [DeliveryRecord], credentials: CredentialChanges) {
        for r in records {
            metrics.deliveries.increment([r.provider?.rawValue ?? "none", r.status.rawValue, r.errorCode?.rawValue ?? ""])
            if r.ledger == .refund { metrics.refunds.increment() }
        }
        for c in credentials.invalid { metrics.credentialsInvalid.increment([c.kind.rawValue]) }
    }
}
