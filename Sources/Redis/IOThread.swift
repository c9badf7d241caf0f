#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Runs `body` on a thread of its own: a connection's I/O loop blocks in
/// `poll`, which would hold one of Dispatch's shared worker threads for good.
/// `name` (at most 15 bytes) is what `top -H` and a debugger show for it.
func startIOThread(named name: String, _ body: @escaping @Sendable () -> Void) {
    final class Box: Sendable {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, _ body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
    }
    var thread = pthread_t()
    let status = pthread_create(&thread, nil, { raw in
        let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        nameThisThread(box.name)
        box.body()
        return nil
    }, Unmanaged.passRetained(Box(name: name, body)).toOpaque())
    precondition(status == 0, "pthread_create failed (\(status))")
    pthread_detach(thread)
}

/// Names the calling thread through `/proc`: `pthread_setname_np` needs
/// `_GNU_SOURCE`, which Swift's Glibc module is not built with.
private func nameThisThread(_ name: String) {
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    let bytes = Array(name.utf8.prefix(15))
    _ = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    close(fd)
}

/// A self-pipe that wakes a thread blocked in `poll` when callers have queued work.
///
/// Its ends close when the last holder lets go, not when the thread stops: a
/// caller may still wake a thread that has just finished, and by then a closed
/// end's number may be another socket or file, which would get the byte.
final class WakePipe: Sendable {
    let readEnd: Int32
    let writeEnd: Int32

    init() {
        var ends: [Int32] = [0, 0]
        let status = pipe(&ends)
        precondition(status == 0, "pipe failed (\(errno))")
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        _ = close(readEnd)
        _ = close(writeEnd)
    }

    func wake() {
        var byte: UInt8 = 1
        _ = write(writeEnd, &byte, 1)
    }

    /// Empties the pipe. A read that did not fill the buffer took all
    /// there was: no second read to hear the pipe is empty (a wake-up per
    /// request would otherwise cost two reads).
    func drain() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let size = MemoryLayout.size(ofValue: bytes)
        while read(readEnd, &bytes, size) == size {}
    }
}
