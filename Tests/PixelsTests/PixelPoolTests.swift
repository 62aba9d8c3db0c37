import Pixels
import Testing

/// The pool of large pixel blocks (a pool of its own per test: the shared one serves every
/// test running at the same time).
@Suite struct PixelPoolTests {
    let unit = 1000

    @Test func aBlockGoesToTheNextRequestOfItsSizeAndBackToTheSystemAfterTheBatch() async {
        let pool = PixelPool(smallest: unit, capacity: 100 * unit)
        await pool.keeping {
            let first = pool.allocate(4 * unit)
            first[0] = 42
            pool.deallocate(first, bytes: 4 * unit)
            #expect(pool.keptBytes == 4 * unit)
            let second = pool.allocate(4 * unit)
            #expect(second == first, "the kept block is handed out again")
            #expect(pool.reusedBlocks == 1 && pool.keptBytes == 0)
            pool.deallocate(second, bytes: 4 * unit)
        }
        #expect(pool.keptBytes == 0, "everything kept is freed when the batch ends")
    }

    @Test func nothingIsKeptOutsideABatchOrBelowTheSmallestSize() async {
        let pool = PixelPool(smallest: unit, capacity: 100 * unit)
        let outside = pool.allocate(4 * unit)
        pool.deallocate(outside, bytes: 4 * unit)
        #expect(pool.keptBytes == 0)
        await pool.keeping {
            let small = pool.allocate(unit - 1)
            pool.deallocate(small, bytes: unit - 1)
            #expect(pool.keptBytes == 0)
        }
    }

    /// Kept plus in use never passes the most in use at once: a block of a new size first
    /// frees kept blocks, oldest first; the capacity bounds what is kept.
    @Test func keptBlocksNeverRaiseThePeak() async {
        let pool = PixelPool(smallest: unit, capacity: 5 * unit)
        await pool.keeping {
            let blocks = (0..<3).map { _ in pool.allocate(2 * unit) }  // peak 6 units in use
            for block in blocks { pool.deallocate(block, bytes: 2 * unit) }
            #expect(pool.keptBytes == 4 * unit, "the third block is past the capacity")
            // 3 units of a new size: 4 kept + 3 would pass the peak of 6: one block goes.
            let other = pool.allocate(3 * unit)
            #expect(pool.keptBytes == 2 * unit)
            let again = pool.allocate(2 * unit)
            #expect(pool.reusedBlocks == 1 && pool.keptBytes == 0)
            pool.deallocate(other, bytes: 3 * unit)
            pool.deallocate(again, bytes: 2 * unit)
            #expect(pool.keptBytes == 5 * unit)
        }
        #expect(pool.keptBytes == 0)
    }
}
