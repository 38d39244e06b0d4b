import FakeOpenIDProvider
import Foundation

// `fake-openid [--port N] [--client-id ID] [--client-secret SECRET]`: the fake OpenID Connect provider as a process,
// for the browser tests. It prints one line, `issuer http://127.0.0.1:PORT`, to standard output once it listens
// (the script waits for it), logs to standard error, and runs until it is killed.

// A static rather than a top-level `let`: top-level variables are main-actor isolated, and `fail` is not.
enum Usage {
    static let text = "usage: fake-openid [--port N] [--client-id ID] [--client-secret SECRET]\n"
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("fake-openid: \(message)\n\(Usage.text)".utf8))
    exit(2)
}

var port = 0
var clientID = "receiptverify-test"
var clientSecret = "test-secret"
var arguments = CommandLine.arguments.dropFirst()
while let option = arguments.popFirst() {
    if option == "--help" || option == "-h" {
        FileHandle.standardOutput.write(Data(Usage.text.utf8))
        exit(0)
    }
    guard let value = arguments.popFirst() else { fail("\(option) needs a value") }
    switch option {
    case "--port":
        guard let number = Int(value), (0...65535).contains(number) else { fail("--port \(value) is not a port") }
        port = number
    case "--client-id": clientID = value
    case "--client-secret": clientSecret = value
    default: fail("unknown option \(option)")
    }
}

let provider: FakeOpenIDProvider
do {
    provider = try await FakeOpenIDProvider.start(clientID: clientID, clientSecret: clientSecret, port: port)
} catch {
    fail("\(error)")
}
// Written straight to the file descriptor (no stdio buffer to flush), so a script reading a pipe sees it at once.
try FileHandle.standardOutput.write(contentsOf: Data("issuer \(provider.issuer)\n".utf8))

// SIGTERM or SIGINT ends the process (their default action); the provider has nothing to save.
while true {
    try await Task.sleep(for: .seconds(3600))
}
