import Foundation
import Testing

@testable import ReceiptService

/// A file written beside its name: whole once committed, absent (and no part file) when its writing fails.
@Suite struct AtomicFileTests {
    struct Failure: Error {}

    @Test func aFileAppearsWholeOrNotAtAll() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("atomic-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("out.jsonl").path
        let files = { try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() }

        // While written, only the part file exists.
        try await AtomicFile.write(path: path) { file in
            try file.write(Array("one\n".utf8))
            #expect(try files() == ["out.jsonl.part"])
            try file.write(Array("two\n".utf8))
        }
        #expect(try files() == ["out.jsonl"])
        #expect(FileManager.default.contents(atPath: path) == Data("one\ntwo\n".utf8))

        // A failed rewrite leaves the earlier file as it was and no part file behind.
        await #expect(throws: Failure.self) {
            try await AtomicFile.write(path: path, partPath: folder.appendingPathComponent(".mine.part").path) {
                try $0.write(Array("half".utf8))
                throw Failure()
            }
        }
        #expect(try files() == ["out.jsonl"])
        #expect(FileManager.default.contents(atPath: path) == Data("one\ntwo\n".utf8))

        // A folder that does not exist: a storage error, nothing written.
        let missing = folder.appendingPathComponent("missing/out.jsonl").path
        await #expect(throws: ServiceError.self) { try await AtomicFile.write(path: missing) { _ in } }
    }
}
