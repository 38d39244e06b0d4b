import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import ReceiptService

/// What `GET /api/export` and the account screen's downloads share: the query read once, and the rows streamed.
enum ExportResponse {
    /// The query's parameters by name; throws ``ServiceError/Code/invalidArgument`` for a name given twice (which of
    /// two would count is a guess).
    static func parameters(of request: Request) throws -> [String: String] {
        var parameters: [String: String] = [:]
        for (name, value) in request.uri.queryParameters {
            let name = String(name)
            guard parameters[name] == nil else {
                throw ServiceError(.invalidArgument, "\(name) is given more than once")
            }
            parameters[name] = String(value)
        }
        return parameters
    }

    /// A 200 whose body is `export` of `app`, a page at a time, saved as `fileName`; `headers` add to it. `slot` is
    /// the body's: given back when it ends, fails, or is never run. Once rows flow, a failure cuts the transfer (the
    /// chunked body never ends) and is logged with `metadata`.
    static func streaming(
        _ export: ExportRequest, app: App, exporter: Exporter, slot: ExportSlots.Slot, fileName: String,
        headers extra: HTTPFields = [:], logger: Logger, metadata: Logger.Metadata
    ) -> Response {
        var headers = extra
        headers[.cacheControl] = "no-store"
        headers[.contentType] = export.format.contentType
        headers[.contentDisposition] = "attachment; filename=\"\(fileName).\(export.format.fileExtension)\""
        return Response(
            status: .ok, headers: headers,
            body: ResponseBody { writer in
                defer { slot.release() }
                do {
                    try await exporter.run(export, app: app) { try await writer.write(ByteBuffer(bytes: $0)) }
                } catch {
                    var metadata = metadata
                    metadata["error"] = "\(error)"
                    logger.warning("export cut short", metadata: metadata)
                    throw error
                }
                try await writer.finish(nil)
            })
    }
}
