import ReceiptServer

extension ServerConfiguration {
    /// The server's defaults with a database deadline fit for a shared test machine: the in-process suites run
    /// beside a hundred others and PostgreSQL on two cores, where a SQLite commit has been seen to wait past the
    /// production default of two seconds and answer 503. Tests about the deadline itself set their own.
    static func forTests(publicMetrics: Bool = false) -> ServerConfiguration {
        var configuration = ServerConfiguration(publicMetrics: publicMetrics)
        configuration.databaseTimeout = .seconds(15)
        return configuration
    }
}
