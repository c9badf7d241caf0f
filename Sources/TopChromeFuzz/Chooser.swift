// A reference model of the v1 API, written from the README and openapi.yaml
// rather than from the production code, for the `request` and `body`
// targets to compare the real `SessionAPI` with. Where the standards leave
// room (odd but harmless syntax) the model says `either` and both answers pass.
// The model is in four parts: HTTPModel (paths, headers, preconditions),
// FramingModel (how a body is framed), BodyModel (request bodies) and
// RulesModel (the chrome's rules); this file has what they share.

/// A yes/no the model may leave open.
enum Decision: Equatable {
    case yes, no, either

    init(_ flag: Bool) { self = flag ? .yes : .no }
}

/// Runs a model once per combination of its open decisions and collects the outcomes.
struct Chooser {
    private var prefix: [Bool]
    private(set) var taken: [Bool] = []

    init(prefix: [Bool]) { self.prefix = prefix }

    mutating func callAsFunction(_ decision: Decision) -> Bool {
        switch decision {
        case .yes: return true
        case .no: return false
        case .either:
            let choice = taken.count < prefix.count ? prefix[taken.count] : false
            taken.append(choice)
            return choice
        }
    }

    static func all<Outcome: Hashable>(_ model: (inout Chooser) -> Outcome) -> Set<Outcome> {
        var outcomes = Set<Outcome>()
        var queue: [[Bool]] = [[]]
        while let prefix = queue.popLast() {
            var chooser = Chooser(prefix: prefix)
            outcomes.insert(model(&chooser))
            for index in prefix.count..<chooser.taken.count {
                queue.append(Array(chooser.taken[..<index]) + [!chooser.taken[index]])
            }
        }
        return outcomes
    }
}
