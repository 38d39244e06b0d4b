import Logging
import ReceiptService
import ReceiptStore
import Testing

@Suite struct StoreLocationTests {
    @Test(arguments: [
        ("receiptverify.sqlite", StoreLocation.sqlite(path: "receiptverify.sqlite")),
        ("sqlite:/var/lib/rv.db", .sqlite(path: "/var/lib/rv.db")),
        ("sqlite:///var/lib/rv.db", .sqlite(path: "/var/lib/rv.db")),
        ("postgres://u:p@h/db", .postgres(url: "postgres://u:p@h/db")),
        ("postgresql://h/db", .postgres(url: "postgresql://h/db")),
    ])
    func databaseSettingsChooseTheStore(text: String, location: StoreLocation) {
        #expect(StoreLocation(text) == location)
    }

    @Test func redactionHidesThePassword() {
        let location = StoreLocation("postgres://rv:s3cr%40t@db.internal:5432/rv?sslmode=require")
        #expect(location.redacted == "postgres://rv:***@db.internal:5432/rv?sslmode=require")
        #expect(!location.redacted.contains("s3cr"))
    }

    @Test(arguments: [
        "mysql://h/db", "postgres:///db", "postgres://h/db?sslmode=sometimes", "postgres://h/db?pool_size=0",
        "postgres://h/db?pool_size=many",
    ])
    func malformedPostgresURLsAreRefused(url: String) {
        #expect(throws: ServiceError(.invalidArgument)) {
            _ = try PostgresStore(url: url, logger: Logger(label: "test"))
        }
    }
}
