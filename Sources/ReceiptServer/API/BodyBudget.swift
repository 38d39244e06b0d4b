import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One budget of memory for all request bodies being read at once: a body that would take it past ``limit`` is
/// refused (503, `Retry-After`) instead of read, so a thousand clients each holding a large body cannot drive the
/// process out of memory. After a burst the allocator is asked to give the freed memory back to the system.
final class BodyBudget: Sendable {
    /// The most bytes held by bodies in flight.
    let limit: Int
    private let used = Atomic<Int>(0)
    private let peakSinceTrim = Atomic<Int>(0)
    private let trimming = Atomic<Bool>(false)

    /// What a burst must have held before memory is handed back when it ends.
    static let trimThreshold = 16 << 20

    init(limit: Int) {
        self.limit = limit
    }

    /// Reserves `bytes`; false when that would pass the limit.
    func reserve(_ bytes: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while true {
            guard current + bytes <= limit else { return false }
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged {
                peakSinceTrim.max(current + bytes, ordering: .relaxed)
                return true
            }
            current = original
        }
    }

    /// Gives `bytes` back; when the last body of a large burst is gone, returns freed memory to the system.
    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        let remaining = used.wrappingSubtract(bytes, ordering: .relaxed).newValue
        guard remaining == 0, peakSinceTrim.load(ordering: .relaxed) >= Self.trimThreshold,
            !trimming.exchange(true, ordering: .acquiring)
        else { return }
        peakSinceTrim.store(0, ordering: .relaxed)
        Task.detached(priority: .background) { [self] in
            Self.returnFreedMemory()
            trimming.store(false, ordering: .releasing)
        }
    }

    /// glibc's `malloc_trim(0)`: freed heap pages go back to the system (glibc otherwise keeps them for reuse, and a
    /// burst of large bodies would stay in the process's resident size). Looked up at run time, as Swift's Glibc
    /// module does not export `malloc.h`; elsewhere nothing happens.
    private static func returnFreedMemory() {
        #if canImport(Glibc)
            typealias Trim = @convention(c) (Int) -> Int32
            guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else { return }
            _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }

}
