import Foundation

extension FakeMaterial {
    /// The fake FCM's project (`LiveFakes.fcmProject` in the worker tests).
    public static let fcmProject = "pushfleet-test"
    /// The fake FCM's service-account client (`LiveFakes.fcmClient`).
    public static let fcmClient = "fcm@pushfleet-test.iam.gserviceaccount.com"

    /// A service-account JSON file for the fake FCM (client `fcm@pushfleet-test.iam`, project
    /// `pushfleet-test`) holding the private key of `keyFile` (the fake trusts `sa_key.pem` only).
    public static func serviceAccountJSON(tokenURI: String, keyFile: String = "sa_key.pem",
                                          project: String = fcmProject) throws -> [UInt8] {
        let object: [String: Any] = [
            "type": "service_account", "project_id": project, "client_email": fcmClient,
            "private_key_id": "kid-1", "private_key": try text(keyFile), "token_uri": tokenURI,
        ]
        return Array(try JSONSerialization.data(withJSONObject: object))
    }
}
