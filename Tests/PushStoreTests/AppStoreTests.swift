import Foundation
import XCTest
@testable import PushStore

/// R-APP-1: an app's policy and placeholder text, with their defaults, as the database keeps them.
final class AppStoreTests: RegistryTestCase {
    func testRAPP1NewAppHasEncryptionOffAndTheDefaultPlaceholders() throws {
        let app = try AppStore(connection: conn).appCreate(name: "defaults")
        XCTAssertFalse(app.requireEncryption, "require_encryption is off by default")
        XCTAssertEqual(app.placeholderTitle, "New notification")
        XCTAssertEqual(app.placeholderBody, "", "the default body is empty, emitted as \"\"")
        XCTAssertEqual(try AppStore(connection: conn).appGet(id: app.id), app)
    }

    func testRAPP1PolicyAndPlaceholdersAreKeptAsGivenAndUpdatedFieldByField() throws {
        let store = AppStore(connection: conn)
        let app = try store.appCreate(name: "set", requireEncryption: true, placeholderTitle: "Nouveau",
                                      placeholderBody: "Ouvrez l'app")
        XCTAssertEqual([app.requireEncryption ? "on" : "off", app.placeholderTitle, app.placeholderBody],
                       ["on", "Nouveau", "Ouvrez l'app"])
        let updated = try XCTUnwrap(store.appUpdate(id: app.id, requireEncryption: false))
        XCTAssertEqual([updated.requireEncryption ? "on" : "off", updated.placeholderTitle, updated.placeholderBody],
                       ["off", "Nouveau", "Ouvrez l'app"], "fields not given are left unchanged")
    }
}
