/// `--help` texts, one per command.
enum Help {
    static let main = """
    pushfleet: push-notification delivery workers (HPKE-sealed per device; APNs, FCM, Web Push).

    Usage: pushfleet <command> [options]        (DATABASE_URL: a libpq URI or conninfo string)

    Commands:
      migrate                        apply sql/ migrations (idempotent, safe from several replicas at once)
      worker                         run a worker until SIGTERM/SIGINT (graceful drain)
      apps create|update|show|delete push apps: require_encryption, content mode, placeholders
      devices register|delete|list   the device registry (R-DEV-1..8)
      send                           accept a notification (exact 4096-byte check, then push_enqueue)
      notifications show|cancel|revoke ID   a notification, its deliveries and ledger; cancel a scheduled one; revoke its previews
      stats [--watch]                queue depth by state, due now, age of the oldest due job, paused provider hosts,
                                     confirmation rates (24 h) of apps with confirm_deliveries
      jobs list --state S | retry ID operators: poison (discarded) jobs and putting them back
      ledger check                   audit charges and refunds against deliveries (R-SEND-8/9)
      webhooks create|list|...       webhook endpoints, attempts and resends (signed, retried for 3 days)
      api                            the HTTP API (/v1/push/...) until SIGTERM/SIGINT (graceful drain)
      accounts create                an account (owns apps and API keys)
      api-keys create|list|revoke    API keys: mk_test_/mk_live_, permissions, optionally limited to apps; shown once
      audit                          who created or revoked keys, changed credentials or require_encryption, when
      usage                          deliveries charged net of refunds per app, mode and day (the ledger)
      users erase                    erase one user of an app (devices deactivated, their content erased)
      keys generate                  a P-256 device key pair (test tooling: the demo keeps the private half)
      envelope open                  open an envelope with a device private key (test tooling)

    Every command takes --json (machine output) and --help. Rule ids (R-DEV-4, R-SEND-9, ...) are
    defined in docs/rules.md.
    """

    static let worker = """
    Usage: pushfleet worker [--claim-limit N] [--batch-size N] [--lease-seconds S] [--poll-interval S]
                            [--split-chunk N] [--split-pending N] [--until-drained] [--metrics-addr HOST:PORT]
      --claim-limit     jobs claimed at once (default 128, or PUSHFLEET_CONCURRENCY)
      --split-chunk     devices of a whole-app audience split into batch jobs per step (default 5000, at most 10000)
      --split-pending   a whole-app audience's unfinished batches that pause its split (default 100)
      --until-drained   exit 0 once no job is available or running and no webhook is due or in flight
                        (scheduled jobs are waited for, webhook retries scheduled later are not)
      --metrics-addr    /metrics, /healthz, /readyz (default 0.0.0.0:9464; 127.0.0.1:PORT; off)
      Environment: PUSHFLEET_DRAIN_SECONDS (default 25), PUSHFLEET_LOG_LEVEL, PUSHFLEET_METRICS_ADDR,
                   PUSHFLEET_SIMULATOR_LOG (append one line per push the simulator accepts; tests)
      Webhooks (dispatched beside the jobs; needs PUSHFLEET_CREDENTIALS_KEY): PUSHFLEET_WEBHOOKS=on|off,
                   PUSHFLEET_WEBHOOKS_PER_ENDPOINT (default 8 in flight per endpoint, fleet-wide),
                   PUSHFLEET_WEBHOOKS_MAX_IN_FLIGHT (128), PUSHFLEET_WEBHOOKS_LEASE_SECONDS (60),
                   PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK=1 (local testing), PUSHFLEET_WEBHOOKS_CA_FILE
    """

    static let api = """
    Usage: pushfleet api [--addr HOST:PORT] [--management-addr HOST:PORT|off]
      --addr             the API (default 0.0.0.0:8080, or PUSHFLEET_API_ADDR); plain HTTP: TLS is the ingress's
      --management-addr  /healthz, /readyz, /metrics (default 0.0.0.0:9465, or PUSHFLEET_API_MANAGEMENT_ADDR)
      Environment: PUSHFLEET_API_POOL_SIZE (16), PUSHFLEET_API_DRAIN_SECONDS (20),
                   PUSHFLEET_API_REQUEST_DEADLINE_SECONDS (10), PUSHFLEET_API_MAX_BODY_BYTES (65536),
                   PUSHFLEET_API_CONNECTION_LIMIT (1024), PUSHFLEET_API_PER_ADDRESS_LIMIT (256),
                   PUSHFLEET_API_IDLE_TIMEOUT_SECONDS (75), PUSHFLEET_API_THREADING (event-loop|thread-per-connection),
                   PUSHFLEET_API_IO_THREADS (2), PUSHFLEET_API_TRUSTED_PROXIES (addresses or IPv4 CIDRs), PUSHFLEET_LOG_LEVEL,
                   PUSHFLEET_CREDENTIALS_KEY (seals webhook endpoint secrets; without it creating or rotating one is 503),
                   PUSHFLEET_WEBHOOKS_ALLOW_LOOPBACK=1 (loopback endpoint URLs, local testing only)
      OAuth access tokens (RFC 9068, RS256/ES256; all three or none): PUSHFLEET_OAUTH_ISSUER, PUSHFLEET_OAUTH_AUDIENCE,
                   PUSHFLEET_OAUTH_JWKS_URL (https://... or a file), PUSHFLEET_OAUTH_JWKS_CA_FILE,
                   PUSHFLEET_OAUTH_JWKS_REFRESH_SECONDS (3600), PUSHFLEET_OAUTH_LEEWAY_SECONDS (30),
                   PUSHFLEET_OAUTH_RATE_LIMIT (100 per subject); claims pushfleet_account, pushfleet_mode
    """

    static let accounts = """
    Usage: pushfleet accounts create [--name NAME] [--json]     prints the account id (pacc_...)
    """

    static let apiKeys = """
    Usage: pushfleet api-keys create --account ACCOUNT --mode test|live --permissions push_devices:wd,push:rw,push_apps:rw
                                     [--name N] [--rate-limit PER_SECOND] [--apps papp_...,papp_...] [--json]
           pushfleet api-keys list --account ACCOUNT [--json]
           pushfleet api-keys revoke KEY_ID
      The key (mk_test_... / mk_live_...) is printed once (JSON field "key"); only its SHA-256 is stored.
      Permissions (R-API-2): push_devices w (register) d (remove); push r (read devices, notifications) w (send, cancel);
      push_apps r (read apps) w (create, change; changing require_encryption also needs a live key);
      webhooks r (read webhook endpoints) w (create, change, delete, rotate their secrets).
      --apps limits the key to those apps of the account (at most 100): any other app, and its devices,
      notifications and webhook endpoints, answer 404 like missing ones; such a key cannot create apps.
    """

    static let apps = """
    Usage: pushfleet apps create --name NAME [--account ACCOUNT] [--require-encryption true|false] [--placeholder-title T] [--placeholder-body B]
                                [--placeholder-title-loc-key K] [--placeholder-body-loc-key K] [--content-mode sealed|ids_only]
                                [--confirm-deliveries true|false] [--preview-window SECONDS]
           pushfleet apps update ID [--require-encryption true|false] [--placeholder-title T] [--placeholder-body B]
                                [--placeholder-title-loc-key K] [--placeholder-body-loc-key K]   ('' removes a loc key)
                                [--content-mode sealed|ids_only] [--confirm-deliveries true|false] [--preview-window SECONDS]
      --content-mode: sealed (default) seals the content per device; ids_only sends iOS and Android
      only the notification id and the placeholder, the app fetching the content (docs/content-modes.md)
           pushfleet apps show ID | pushfleet apps delete ID
      --confirm-deliveries: a device's first preview fetch or receipt marks its delivery confirmed (R-IDS-4);
      --preview-window: how long an ids_only notification's content stays for the device's fetch after its
      send time, 60 to 2419200 seconds (default 259200, 72 h), never past its TTL.
           pushfleet apps credentials set|show|remove|rotate-key ...   (see pushfleet apps credentials --help)
           pushfleet apps vapid create ID --subject mailto:...          (Web Push, RFC 8292)
    """

    static let devices = """
    Usage: pushfleet devices register --app ID --mode test|live --platform ios|android|web --user USER
                                      [--token TOKEN] [--apns-environment sandbox|production]
                                      [--encryption-public-key B64URL | --remove-key]
                                      [--endpoint URL --p256dh B64URL --auth B64URL] [--rotate-preview-token]
           pushfleet devices delete --app ID --mode test|live DEVICE_ID
           pushfleet devices list --app ID --mode test|live [--user USER] [--active true|false]
      A re-registration without --encryption-public-key keeps the stored key; --remove-key removes it (R-DEV-4).
      A new device gets a preview token (ppt_...), printed once; --rotate-preview-token makes a new one and
      invalidates the old (issue 24). Only its SHA-256 is stored.
    """

    static let send = """
    Usage: pushfleet send --app ID --mode test|live --user USER [--user USER ...] [--device ID ...]
           pushfleet send --app ID --mode test|live --audience all [--platform ios|android|web ...] ...
                          [--title T] [--body B] [--data JSON_OBJECT] [--badge N] [--sound S] [--thread-id T]
                          [--collapse-key K] [--priority high|normal] [--send-at RFC3339|+30s] [--ttl SECONDS]
                          [--idempotency-key K] [--sms-phone P --sms-text T]
                          [--push-type alert|background] [--channel-id C]
                          [--title-loc-key K] [--title-loc-arg A ...] [--body-loc-key K] [--body-loc-arg A ...]
                          [--interruption-level passive|active|time-sensitive|critical] [--relevance-score 0..1]
                          [--category C] [--target-content-id T] [--critical-sound NAME [--critical-volume 0..1]]
      Refuses content whose payload would exceed 4096 bytes for a targeted device (R-SEND-7), saying how
      many bytes to cut; prints the notification id. A background push (R-KIND-1) carries only --data and
      --collapse-key; the iOS presentation fields (R-KIND-2) are ignored for Android and Web devices,
      --channel-id for iOS and Web ones. The SMS fallback (sent when no device could take the
      notification, R-SEND-6, R-SMS-1) needs an E.164 phone (+ and 8 to 15 digits) and 1 to 1600 characters
      of text; its segment count (GSM-7 or UCS-2) is printed on stderr, or in --json.
      --audience all addresses every active device of the app in the mode at the send time (registered
      by then; --platform narrows it, and only it), split into batches as it is sent and charged then,
      batch by batch (R-KIND-5); its size check measures any device of those platforms. --audience users
      (what `notifications show` says of the other kind) is the same as leaving it out: the --user ids.
    """

    static let notifications = """
    Usage: pushfleet notifications show ID | pushfleet notifications cancel ID
           pushfleet notifications revoke ID [--user USER ...]
      show: status, audience (all devices of the app, with its platforms, or the user ids), deliveries
      (with confirmed_at), confirmed_count, ledger, and the SMS fallback's outcome (queued with the
      provider's id, failed with its code, or unknown: written without an answer, never sent again).
      revoke: later preview fetches of its devices (or of those users' devices) answer 404 (R-IDS-2).
      Without --user it also erases the stored content: at once when the notification is final, else
      when it becomes final (revoking never stops a push: cancel a pending one for that); --user: at
      most 1,000 revoked users per notification.
    """

    static let jobs = """
    Usage: pushfleet jobs list --state available|running|completed|discarded|cancelled [--limit N]
           pushfleet jobs retry ID
    """

    static let keys = """
    Usage: pushfleet keys generate
           pushfleet envelope open --private-key B64URL --envelope JSON
    """
}
