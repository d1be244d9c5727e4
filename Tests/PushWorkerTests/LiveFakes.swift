import Foundation
import PushTestSupport

extension FakeMaterial {
    /// A service-account JSON file for the fake FCM (client `fcm@pushfleet-test.iam`, project
    /// `pushfleet-test`) holding the private key of `keyFile` (the fake trusts `sa_key.pem` only).
    static func serviceAccountJSON(tokenURI: String, keyFile: String = "sa_key.pem",
                                   project: String = LiveFakes.fcmProject) throws -> [UInt8] {
        let object: [String: Any] = [
            "type": "service_account", "project_id": project, "client_email": LiveFakes.fcmClient,
            "private_key_id": "kid-1", "private_key": try text(keyFile), "token_uri": tokenURI,
        ]
        return Array(try JSONSerialization.data(withJSONObject: object))
    }
}

/// The three fakes a live test talks to: APNs production, APNs sandbox (same key and topic), FCM.
final class LiveFakes {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.app"
    static let fcmProject = "pushfleet-test"
    static let fcmClient = "fcm@pushfleet-test.iam.gserviceaccount.com"

    let apns: FakeProviderServer
    let sandbox: FakeProviderServer
    let fcm: FakeProviderServer

    init() throws {
        apns = try .startAPNs(teamID: Self.teamID, keyID: Self.keyID, topic: Self.topic)
        sandbox = try .startAPNs(teamID: Self.teamID, keyID: Self.keyID, topic: Self.topic)
        fcm = try .startFCM(clientEmail: Self.fcmClient, projectID: Self.fcmProject)
    }

    func stop() {
        apns.stop()
        sandbox.stop()
        fcm.stop()
    }
}
