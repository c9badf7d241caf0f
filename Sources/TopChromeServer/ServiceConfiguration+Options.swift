/// Every option: its flag, environment variable, help, default and parser
/// in one declaration each, which `parse`, `usage` and the defaults all
/// read. Each group of settings declares its own options beside its
/// fields (`HTTPSettings.options`, …); `options` lists the groups.
extension ServiceConfiguration {
    /// Every option, group by group, in the order `--help` shows them.
    static let options: [Option] = HTTPSettings.options + TLSSettings.options + AuthSettings.options + TokenSettings.options
        + LimitSettings.options + SessionSettings.options + LogSettings.options
        + RedisSettings.options + StateFileSettings.options

    /// One option, declared once: its flag (and from it its environment
    /// variable), its help, where its default is read, and how its value is
    /// read into a configuration.
    struct Option: Sendable {
        let name: String
        let placeholder: String
        /// `{default}` stands where the default goes, read by `default`
        /// from a configuration as `init()` makes it, so help cannot state
        /// another default than the property's.
        private let help: String
        let `default`: (@Sendable (ServiceConfiguration) -> String)?
        /// Read by a Redis store only, so refused with the memory store.
        let redisOnly: Bool
        let apply: @Sendable (String, String, inout ServiceConfiguration) throws(UsageError) -> Void

        init(name: String, placeholder: String, help: String, default: (@Sendable (ServiceConfiguration) -> String)? = nil,
             redisOnly: Bool = false,
             apply: @escaping @Sendable (String, String, inout ServiceConfiguration) throws(UsageError) -> Void) {
            self.name = name
            self.placeholder = placeholder
            self.help = help
            self.default = `default`
            self.redisOnly = redisOnly
            self.apply = apply
        }

        /// The shape of most options: a number in `range` (a count, bytes,
        /// seconds) written to `property`; help shows the property's default
        /// unless `showsDefault` is false (a default said in words).
        static func number<Value: OptionNumber>(
            _ name: String, _ placeholder: String, help: String,
            _ property: WritableKeyPath<ServiceConfiguration, Value> & Sendable, in range: ClosedRange<Value>,
            showsDefault: Bool = true, redisOnly: Bool = false
        ) -> Option {
            let shown: @Sendable (ServiceConfiguration) -> String = { $0[keyPath: property].shown }
            return Option(name: name, placeholder: placeholder, help: help, default: showsDefault ? shown : nil,
                          redisOnly: redisOnly) { (value: String, source: String, config: inout ServiceConfiguration) throws(UsageError) in
                config[keyPath: property] = try Value.read(value, source, in: range)
            }
        }

        var environmentName: String {
            "TOPCHROME_" + name.uppercased().replacing("-", with: "_")
        }

        /// The help, with the default `defaults` holds.
        func help(_ defaults: ServiceConfiguration) -> String {
            guard let `default` else { return help }
            return help.replacing("{default}", with: `default`(defaults))
        }
    }
}

/// A number an option takes: whole counts, or seconds with a fraction.
protocol OptionNumber: Comparable, Sendable {
    /// The value read from an option's text, or a usage error naming
    /// `source` and the range allowed.
    static func read(_ text: String, _ source: String, in range: ClosedRange<Self>) throws(ServiceConfiguration.UsageError) -> Self
    /// As help shows a default.
    var shown: String { get }
}

extension Int: OptionNumber {
    static func read(_ text: String, _ source: String, in range: ClosedRange<Int>) throws(ServiceConfiguration.UsageError) -> Int {
        guard let number = Int(text), range.contains(number) else {
            throw .init(description: "\(source) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return number
    }

    var shown: String { String(self) }
}

extension Double: OptionNumber {
    static func read(_ text: String, _ source: String, in range: ClosedRange<Double>) throws(ServiceConfiguration.UsageError) -> Double {
        guard let number = Double(text), number.isFinite, range.contains(number) else {
            throw .init(description: "\(source) must be a number of seconds from \(range.lowerBound.shown) to \(range.upperBound.shown), not '\(text)'")
        }
        return number
    }

    /// Whole ones without a fraction: "from 0 to 3600", not "0.0".
    var shown: String { self == rounded() ? String(Int(self)) : String(self) }
}
