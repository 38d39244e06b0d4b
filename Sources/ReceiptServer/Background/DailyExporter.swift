import CoreMetrics
import Foundation
import Logging
import ReceiptCore
import ReceiptService
import ServiceLifecycle

/// Writes the daily export files of `--export-directory` (``DailyExports``): at start, then every `interval`, each
/// file due and missing. A failure is logged and counted, and the next look tries again (a file is whole or absent).
struct DailyExporter: Service {
    let exports: DailyExports
    let interval: Duration
    let metrics: any MetricsFactory
    let logger: Logger

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            await runOnce(now: Date())
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// One look: writes what is due; counts files written and failures.
    func runOnce(now: Date) async {
        do {
            let written = try await exports.writeDue(now: now)
            if !written.isEmpty {
                Counter(label: "receiptverify_export_files_written_total", factory: metrics).increment(
                    by: written.count)
                logger.info("daily export files written", metadata: ["count": "\(written.count)"])
            }
        } catch {
            Counter(label: "receiptverify_export_failures_total", factory: metrics).increment()
            logger.warning(
                "daily export failed; the next look tries again",
                metadata: ["directory": "\(exports.directory.path)", "error": "\(error)"])
        }
    }
}
