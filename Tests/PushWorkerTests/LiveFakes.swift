import Foundation
import PushTestSupport

/// The three fakes a live test talks to: APNs production, APNs sandbox (same key and topic), FCM.
final class LiveFakes {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.app"
    static let fcmProject = FakeMaterial.fcmProject
    static let fcmClient = FakeMaterial.fcmClient

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
