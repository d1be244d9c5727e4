extension DeliveryPlanner {
    /// The devices a whole-app audience's acceptance check measures (R-SEND-7, issue 22): its
    /// devices are known only at its send time and may be a million, so acceptance measures, for
    /// each platform served in `platforms` (nil: every one), a device of the largest address
    /// R-DEV-1 allows with a key and one without (the policy refuses the keyless one where it must,
    /// and the check ignores a refused device). A content that fits these fits every device of those
    /// platforms; the worker applies the rule again per device at send time. Pure.
    public func anyDeviceOf(platforms: [Platform]?) -> [DeviceSnapshot] {
        let served = rules.keys.filter { platforms?.contains($0) ?? true }
            .sorted { $0.rawValue < $1.rawValue }
        let token = String(repeating: "a", count: DeviceRegistration.maxTokenLength)
        let key = [UInt8](repeating: 0x01, count: Envelope.encLength - 1)
        let kid = String(repeating: "A", count: Self.kidLength)
        return served.flatMap { platform in
            [DeviceSnapshot(platform: platform, token: token, apnsEnvironment: .production, publicKey: [0x04] + key, kid: kid),
             DeviceSnapshot(platform: platform, token: token, apnsEnvironment: .production)]
        }
    }
}
