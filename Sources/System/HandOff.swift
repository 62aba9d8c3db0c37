import Glibc

extension FileDescriptor {
    /// A second descriptor for the same open file (closed on exec), for a C library that takes
    /// a descriptor over and closes it itself (libmicrohttpd's file responses): this owner
    /// keeps and closes its own.
    /// - Throws: `SystemError` (`EMFILE` when the process has no descriptor left).
    public func duplicateForHandOff() throws(SystemError) -> Int32 {
        try Syscall.check("duplicate the descriptor of", path.description) { fcntl(raw, F_DUPFD_CLOEXEC, 0) }
    }
}
