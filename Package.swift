// swift-tools-version:6.0
// pushfleet: push-notification delivery workers (see README.md; the rules are in docs/rules.md).
import PackageDescription
import Foundation

/// True when `dir` (relative to this manifest) holds Swift sources; test folders are filled in
/// module by module while the package grows, and SwiftPM refuses a target with no sources.
func hasSources(_ dir: String) -> Bool {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(dir)
    let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
    return names.contains { $0.hasSuffix(".swift") }
}

/// One test target per module, each depending on the modules it exercises.
let testTargets: [Target] = [
    .testTarget(name: "PushCryptoTests", dependencies: ["PushCrypto", "PushTestSupport"]),
    .testTarget(name: "PushCoreTests", dependencies: ["PushCore", "PushCrypto", "PushProviders", "PushTestSupport"]),
    .testTarget(name: "PushStoreTests", dependencies: ["PushStore", "PushCore", "PushCrypto", "PushProviders", "PushTestSupport"]),
    .testTarget(name: "PushProvidersTests", dependencies: ["PushProviders", "PushCore", "PushCrypto", "PushTestSupport"]),
    .testTarget(name: "PushAcceptanceTests",
                dependencies: ["PushAcceptance", "PushStore", "PushCore", "PushCrypto", "PushTestSupport"]),
    .testTarget(name: "PushBenchTests", dependencies: ["PushBench", "PushProviders", "PushCore", "PushCrypto", "PushTestSupport"]),
    .testTarget(name: "PushWorkerTests",
                dependencies: ["PushWorker", "PushAcceptance", "PushStore", "PushProviders", "PushCore", "PushCrypto",
                                "PushTestSupport"]),
    .testTarget(name: "PushAPITests",
                dependencies: ["PushAPI", "PushAcceptance", "PushStore", "PushCore", "PushCrypto", "PushProviders",
                                "PushTestSupport"]),
]

let package = Package(
    name: "pushfleet",
    products: [
        .executable(name: "pushfleet", targets: ["pushfleet"]),
    ],
    targets: [
        // MARK: - System C libraries (Debian -dev packages, found through pkg-config)
        .systemLibrary(name: "CLibpq", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        // HTTP/2 framing for the APNs and FCM client (NGHTTP2Client): the library libcurl itself uses.
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        // Typed wrappers for the variadic C calls Swift cannot make (curl_easy_setopt, MHD_start_daemon).
        .target(name: "CPushShims", dependencies: ["CCurl", "CMicroHTTPD"]),

        // MARK: - Product modules
        .target(name: "PushCrypto", dependencies: ["COpenSSL"]),
        .target(name: "PushCore", dependencies: ["PushCrypto"]),
        .target(name: "PushStore", dependencies: ["CLibpq", "PushCore"]),
        .target(name: "PushProviders", dependencies: ["CCurl", "CPushShims", "CNGHTTP2", "COpenSSL", "PushCrypto", "PushCore"]),
        /// The one acceptance path of the CLI and the API (R-API-6): validation, content, the exact size
        /// rule, then the SQL functions (PushAcceptanceTests). No HTTP, no command-line parsing.
        .target(name: "PushAcceptance", dependencies: ["PushCore", "PushCrypto", "PushStore", "PushProviders"]),
        .target(name: "PushWorker", dependencies: ["PushCore", "PushCrypto", "PushStore", "PushProviders", "CPushShims", "CMicroHTTPD"]),
        /// Micro-benchmarks `pushfleet bench` runs for scripts/bench (the sealing floor, provider clients'
        /// CPU); PushCrypto lends its P-256 scratch through the `Benchmarks` SPI, nothing else.
        .target(name: "PushBench", dependencies: ["PushCrypto", "PushCore", "PushProviders"]),
        // The HTTP API (issue 14): routing, JSON decoding, auth, limits and encoding, on libmicrohttpd.
        .target(name: "PushAPI", dependencies: ["PushCore", "PushCrypto", "PushStore", "PushAcceptance", "PushWorker",
                                                "PushProviders", "CPushShims", "CMicroHTTPD"]),
        .executableTarget(name: "pushfleet", dependencies: ["PushCore", "PushCrypto", "PushStore", "PushProviders", "PushWorker",
                                                          "PushAcceptance", "PushBench", "PushAPI"]),

        // MARK: - Tests (see `testTargets` below)
        /// Test-only helpers shared by the test targets (test targets cannot share files): `RepoPaths`,
        /// `TestVectors` (the one loader of `Tests/Vectors/`),
        /// `FakeProcess` and the fake launchers, `FakeMaterial`, `MigratedTestDatabase`. A regular
        /// target so test targets can depend on it; it must never be a dependency of a product module
        /// or of the `pushfleet` executable.
        .target(name: "PushTestSupport", dependencies: ["CLibpq", "PushStore", "PushCore", "PushCrypto", "PushProviders"],
                path: "Tests/PushTestSupport"),
    ] + testTargets.filter { hasSources("Tests/\($0.name)") },
    swiftLanguageModes: [.v5]
)
