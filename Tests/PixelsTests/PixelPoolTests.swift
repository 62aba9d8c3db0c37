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

    /// A portrait photo's turned bands serve the next landscape photo's (2 % smaller): the
    /// closest kept block up to an eighth larger, given back at its own size.
    @Test func aSlightlyLargerBlockServesASmallerRequest() async {
        let pool = PixelPool(smallest: unit, capacity: 100 * unit)
        await pool.keeping {
            let large = pool.allocate(9 * unit), larger = pool.allocate(10 * unit), huge = pool.allocate(20 * unit)
            for (block, bytes) in [(huge, 20), (larger, 10), (large, 9)] { pool.deallocate(block, bytes: bytes * unit) }
            #expect(pool.keptBytes == 39 * unit)
            let taken = pool.allocate(8 * unit)
            #expect(taken == large, "the closest size that fits, 9 of at most 8 + 1")
            let fresh = pool.allocate(7 * unit)
            #expect(pool.reusedBlocks == 1, "10 is more than an eighth above 7: a new block")
            #expect(fresh != larger)
            #expect(pool.keptBytes == 10 * unit, "20 went, the oldest, to stay under the peak of 39")
            pool.deallocate(taken, bytes: 8 * unit)
            #expect(pool.keptBytes == 19 * unit, "given back as the 9 units it is")
            #expect(pool.allocate(9 * unit) == large)
            pool.deallocate(large, bytes: 9 * unit)
            pool.deallocate(fresh, bytes: 7 * unit)
        }
        #expect(pool.keptBytes == 0)
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
