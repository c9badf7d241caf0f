import Redis
import TopChromeCore

/// Inputs as the library's `apply` reads them (see `inputs` in topchrome.lua).
extension ChromeFunctions {
    private static let scrollWithoutSeq = [UInt8(ascii: "r")], scrollWithSeq = [UInt8(ascii: "q")]
    private static let scrollInFull = [UInt8(ascii: "p")]
    private static let vertical = [UInt8(ascii: "v")], horizontal = [UInt8(ascii: "h")]
    private static let setInset = [UInt8(ascii: "i")], disappear = [UInt8(ascii: "d")]
    private static let setBehavior = [UInt8(ascii: "b")]
    static let none = Array("none".utf8)
    private static let yes = [UInt8(ascii: "1")], no = [UInt8(ascii: "0")]

    static func append(_ input: ChromeInput, to command: inout RESPRequestBuilder) {
        switch input {
        case let .scroll(report):
            // The short forms carry what every report has; only a report
            // with a phase or heights needs the long one.
            let plain = report.phase == nil && report.contentHeight == nil && report.viewportHeight == nil
            command.append(plain ? (report.seq == nil ? scrollWithoutSeq : scrollWithSeq) : scrollInFull)
            command.append(report.contentOffsetY)
            command.append(report.contentInsetTop)
            command.append(report.axis == .vertical ? vertical : horizontal)
            if plain {
                if let seq = report.seq { command.append(seq) }
                return
            }
            if let seq = report.seq { command.append(seq) } else { command.append(none) }
            command.append(report.phase == .ended ? yes : no)
            append(report.contentHeight, to: &command)
            append(report.viewportHeight, to: &command)
        case let .setInset(inset):
            command.append(setInset)
            command.append(inset)
        case .disappear:
            command.append(disappear)
        case let .setBehavior(settings):
            command.append(setBehavior)
            command.append(Array(settings.behavior.rawValue.utf8))
            append(settings.collapsibleHeight.map(Double.init), to: &command)
            command.append(settings.snap ? yes : no)
        }
    }

    private static func append(_ number: Double?, to command: inout RESPRequestBuilder) {
        if let number { command.append(number) } else { command.append(none) }
    }
}
