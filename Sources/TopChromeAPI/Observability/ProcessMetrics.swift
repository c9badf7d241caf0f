#if canImport(Glibc)
import Glibc
#endif

/// The process families every Prometheus client library exports, under the
/// same names and types, so dashboards and alerts written for any service
/// (CPU, memory, descriptors running out, restarts) read this one too.
/// Read from the kernel at each scrape; a family it cannot read is left out
/// rather than reported as 0, which would look like a real value.
enum ProcessMetrics {
    static func render() -> String {
        var text = MetricsText()
        func family(_ name: String, _ kind: MetricsText.Kind, _ help: String, _ value: some CustomStringConvertible) {
            text.family(name, kind, help: help)
            text.sample(name, value)
        }
        if let seconds = cpuSeconds() {
            family("process_cpu_seconds_total", .counter, "Total user and system CPU time spent in seconds.", seconds)
        }
        if let resident = residentBytes() {
            family("process_resident_memory_bytes", .gauge, "Resident memory size in bytes.", resident)
        }
        if let descriptors = openDescriptors() {
            family("process_open_fds", .gauge, "Number of open file descriptors.", descriptors)
        }
        if let start = startTimeSeconds {
            family("process_start_time_seconds", .gauge, "Start time of the process since unix epoch in seconds.", start)
        }
        return text.text
    }

    /// User and system time of every thread, in microseconds from the kernel
    /// (finer than `/proc/self/stat`'s clock ticks).
    static func cpuSeconds() -> Double? {
        var usage = rusage()
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return nil }
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    static func residentBytes() -> Int? {
        guard let statm = read("/proc/self/statm") else { return nil }
        let fields = statm.split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return nil }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    private static let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!

    /// Entries of `/proc/self/fd`, less the one this count reads them through.
    static func openDescriptors() -> Int? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var count = 0
        while let entry = readdir(directory) {
            // The name read up to its NUL in place: a record is as long as
            // its name needs, so copying `d_name` whole reads past it.
            let name = String(cString: (UnsafeRawPointer(entry) + Self.nameOffset).assumingMemoryBound(to: CChar.self))
            guard let descriptor = Int32(name), descriptor != own else { continue }  // also skips . and ..
            count += 1
        }
        return count
    }

    /// When the process started, in Unix seconds: the kernel's boot time plus
    /// the process's start in clock ticks after it (as every Prometheus client
    /// on Linux reads it). Fixed for the process's life, so read once.
    static let startTimeSeconds: Double? = {
        guard let stat = read("/proc/self/stat"), let nameEnd = stat.lastIndex(of: UInt8(ascii: ")")),
              let system = read("/proc/stat") else { return nil }
        // After the command name (which may hold spaces and parentheses):
        // field 3, the state, then on to field 22, the start time.
        let fields = stat[(nameEnd + 1)...].split(separator: UInt8(ascii: " "))
        guard fields.count > 19, let ticks = Double(String(decoding: fields[19], as: UTF8.self)) else { return nil }
        let bootLine = system.split(separator: UInt8(ascii: "\n")).first { $0.starts(with: "btime ".utf8) }
        guard let bootLine, let boot = Double(String(decoding: bootLine.dropFirst(6), as: UTF8.self)) else { return nil }
        let ticksPerSecond = sysconf(Int32(_SC_CLK_TCK))
        guard ticksPerSecond > 0 else { return nil }
        return boot + ticks / Double(ticksPerSecond)
    }()

    /// A file of `/proc` whole. Its size reads as 0, so it is read until its end.
    private static func read(_ path: String) -> [UInt8]? {
        let file = open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return nil }
        defer { close(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(file, &chunk, chunk.count)
            if count == 0 { return bytes }
            if count < 0 {
                if errno == EINTR { continue }
                return nil
            }
            bytes.append(contentsOf: chunk[..<count])
        }
    }
}
