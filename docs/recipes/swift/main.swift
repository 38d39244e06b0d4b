// Verify a receipt with ReceiptVerify from a Swift backend (Vapor, Hummingbird, or a plain server): call /api,
// then /apiencrypted for an app with each cipher and open the sealed answer with swift-crypto (`import Crypto`;
// on Apple platforms CryptoKit has the same AES.GCM, and CBC comes from swift-crypto's _CryptoExtras).
// Built with this package (`swift build` makes the SwiftRecipe executable); scripts/recipes.sh runs it.
// Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_CBC, RV_TOKEN_GCM, RV_RESULT_KEY_CBC, RV_RESULT_KEY_GCM
// (base64 of each app's 32-byte result key), RV_RECEIPT (a file holding the receipt's base64).
import Crypto
import Foundation
import _CryptoExtras

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

let env = ProcessInfo.processInfo.environment

/// application/x-www-form-urlencoded: everything but unreserved characters percent-encoded (base64's + / = too).
func formEncode(_ fields: [(String, String)]) -> Data {
    let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
    let pairs = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: unreserved)!)" }
    return Data(pairs.joined(separator: "&").utf8)
}

/// Opens an `/apiencrypted` answer: base64 of `IV[16] ‖ AES-256-CBC(json, PKCS#7)` or of
/// `nonce[16] ‖ ciphertext ‖ tag[16]` (GCM, no associated data; a modified answer fails to open).
func open(_ body: String, key: SymmetricKey, cipher: String) throws -> Data {
    guard let data = Data(base64Encoded: body), data.count > 32 else { throw CocoaError(.coderInvalidValue) }
    if cipher == "aes-256-gcm" {
        let box = try AES.GCM.SealedBox(
            nonce: AES.GCM.Nonce(data: data.prefix(16)), ciphertext: data.dropFirst(16).dropLast(16),
            tag: data.suffix(16))
        return try AES.GCM.open(box, using: key)
    }
    return try AES._CBC.decrypt(data.dropFirst(16), using: key, iv: AES._CBC.IV(ivBytes: data.prefix(16)))
}

/// Posts the receipt and checks the answer: status 0 and our nonce echoed (inside the ciphertext when sealed).
func verify(path: String, token: String, receipt: String, key: SymmetricKey? = nil, cipher: String = "") async
    -> Bool
{
    let nonce = UUID().uuidString
    let label = key == nil ? path : "\(path) \(cipher)"
    var request = URLRequest(url: URL(string: env["RV_URL", default: ""] + path)!)
    request.httpMethod = "POST"
    request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
    request.httpBody = formEncode([
        ("apikey", env["RV_KEY", default: ""]), ("token", token), ("receipt", receipt), ("nonce", nonce),
    ])
    do {
        let (data, response) = try await URLSession.shared.data(for: request)
        var json = data
        // A sealed answer is text/plain; every failure is plain JSON.
        if let key,
            (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Content-Type")?.hasPrefix("text/plain")
                == true
        {
            json = try open(String(decoding: data, as: UTF8.self), key: key, cipher: cipher)
        }
        guard let answer = try JSONSerialization.jsonObject(with: json) as? [String: Any] else {
            print("FAIL \(label): not a JSON object")
            return false
        }
        let status = answer["status"] as? Int
        let echoed = answer["nonce"] as? String == nonce
        print("\(status == 0 && echoed ? "ok  " : "FAIL") \(label): status \(status ?? -1), nonce echoed: \(echoed)")
        return status == 0 && echoed
    } catch {
        print("FAIL \(label): \(error)")
        return false
    }
}

func resultKey(_ name: String) -> SymmetricKey {
    SymmetricKey(data: Data(base64Encoded: env[name, default: ""]) ?? Data())
}

let receipt = (try? String(contentsOfFile: env["RV_RECEIPT", default: ""], encoding: .utf8))?
    .trimmingCharacters(in: .whitespacesAndNewlines)
guard let receipt else {
    print("FAIL reading RV_RECEIPT")
    exit(1)
}
var ok = await verify(path: "/api", token: env["RV_TOKEN_CBC", default: ""], receipt: receipt)
ok =
    await verify(
        path: "/apiencrypted", token: env["RV_TOKEN_CBC", default: ""], receipt: receipt,
        key: resultKey("RV_RESULT_KEY_CBC"), cipher: "aes-256-cbc") && ok
ok =
    await verify(
        path: "/apiencrypted", token: env["RV_TOKEN_GCM", default: ""], receipt: receipt,
        key: resultKey("RV_RESULT_KEY_GCM"), cipher: "aes-256-gcm") && ok
exit(ok ? 0 : 1)
