import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One budget of memory for all request bodies being read at once: a body that would take it past ``limit`` is
/// refused (503, `Retry-After`) instead of read, so a thousand clients each holding a large body cannot drive the
/// process out of memory. After a burst the allocator is asked to give the freed memory back to the system.
///
/// Memory is reserved as bytes arrive (a granule at a time, ``granule``), never as a `Content-Length` declares, so a
/// connection that declares megabytes and trickles them holds one granule. No client address holds more than its
/// share (``perAddress``), and the last ``smallRoom`` bytes are kept for small bodies (a body's first granule, which
/// holds any receipt): strangers who hold large bodies open cannot take the room a paying client's request needs.
final class BodyBudget: Sendable {
    /// The most bytes held by bodies in flight.
    let limit: Int
    /// The most bytes the bodies of one client address may hold.
    let perAddress: Int
    /// Bytes only a body's first granule may take.
    let smallRoom: Int
    private let used = Atomic<Int>(0)
    private let byAddress = Mutex<[String: Int]>([:])
    private let peakSinceTrim = Atomic<Int>(0)
    private let trimming = Atomic<Bool>(false)

    /// What a burst must have held before memory is handed back when it ends.
    static let trimThreshold = 16 << 20
    /// The reservation granule: a body holds its bytes rounded up to it.
    static let granule = 64 << 10

    /// Creates a budget of `limit` bytes; an address may hold an eighth of it (at least `maximumBody` and a granule),
    /// and an eighth is kept for small bodies.
    init(limit: Int, maximumBody: Int = 2 << 20) {
        self.limit = limit
        perAddress = max(limit / 8, maximumBody + Self.granule)
        smallRoom = limit / 8
    }

    /// Reserves `bytes` more for a body from `address` that holds `holding` already; false when that would pass the
    /// limit, the address's share, or (beyond a body's first granule) the room kept for small bodies.
    func reserve(_ bytes: Int, holding: Int, for address: String) -> Bool {
        let ceiling = holding + bytes <= Self.granule ? limit : limit - smallRoom
        let admitted = byAddress.withLock { addresses -> Bool in
            let held = addresses[address] ?? 0
            guard held + bytes <= perAddress else { return false }
            guard reserveTotal(bytes, ceiling: ceiling) else { return false }
            addresses[address] = held + bytes
            return true
        }
        return admitted
    }

    private func reserveTotal(_ bytes: Int, ceiling: Int) -> Bool {
        var current = used.load(ordering: .relaxed)
        while true {
            guard current + bytes <= ceiling else { return false }
            let (exchanged, original) = used.compareExchange(
                expected: current, desired: current + bytes, ordering: .relaxed)
            if exchanged {
                peakSinceTrim.max(current + bytes, ordering: .relaxed)
                return true
            }
            current = original
        }
    }

    /// Gives back all that a body from `address` held.
    func release(_ bytes: Int, for address: String) {
        guard bytes > 0 else { return }
        byAddress.withLock { addresses in
            let left = (addresses[address] ?? 0) - bytes
            if left > 0 { addresses[address] = left } else { addresses[address] = nil }
        }
        release(bytes)
    }

    /// Gives `bytes` back; when the last body of a large burst is gone, returns freed memory to the system.
    private func release(_ bytes: Int) {
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
