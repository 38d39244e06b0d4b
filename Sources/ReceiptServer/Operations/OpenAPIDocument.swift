import Hummingbird
import NIOCore

/// The API's contract: the hand-written OpenAPI 3.1 document in `openapi.json` beside this file, compiled into the
/// binary and served as is at `/openapi.json`. Every public route is in it; the contract test (scripts/contract.sh)
/// checks the server's answers against it, and every route added later joins it.
enum OpenAPIDocument {
    /// The document's bytes.
    static let bytes: [UInt8] = PackageResources.openapi_json

    /// The answer to `GET /openapi.json`.
    static func response() -> Response {
        Response(
            status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-cache"],
            body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
