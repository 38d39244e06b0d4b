import Foundation
import Synchronization

/// How many exports each account may have streaming at once on this server (`GET /api/export` and the account
/// screen's downloads): an export is admitted once by the plan but then runs for as long as its rows take, so the rate
/// limit alone would let one account keep any number of them open. A slot is held by a ``Slot`` for as long as its
/// response lives and is given back when the slot is released or dropped (a response never sent gives it back too).
final class ExportSlots: Sendable {
    /// Exports an account may have streaming at once.
    let perAccount: Int
    private let running = Mutex<[UUID: Int]>([:])

    init(perAccount: Int = 2) {
        self.perAccount = perAccount
    }

    /// A slot of `account`, or nil when all its slots are taken.
    func take(for account: UUID) -> Slot? {
        let taken = running.withLock { running -> Bool in
            guard running[account, default: 0] < perAccount else { return false }
            running[account, default: 0] += 1
            return true
        }
        return taken ? Slot(slots: self, account: account) : nil
    }

    /// Exports of `account` streaming now.
    func count(of account: UUID) -> Int { running.withLock { $0[account, default: 0] } }

    fileprivate func giveBack(_ account: UUID) {
        running.withLock { running in
            let left = running[account, default: 1] - 1
            running[account] = left > 0 ? left : nil
        }
    }

    /// One export's slot: given back once, when released or when the last reference to it goes.
    final class Slot: Sendable {
        private let slots: ExportSlots
        private let account: UUID
        private let held = Mutex(true)

        fileprivate init(slots: ExportSlots, account: UUID) {
            self.slots = slots
            self.account = account
        }

        /// Gives the slot back (again: nothing).
        func release() {
            if held.withLock({ held in
                defer { held = false }; return held
            }) {
                slots.giveBack(account)
            }
        }

        deinit { release() }
    }
}
