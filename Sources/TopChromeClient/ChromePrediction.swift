import TopChromeCore

/// What `RemoteTopChrome` shows between a report and the service's answer:
/// the service's last state with the reports it has not answered yet
/// applied on top, by the same `ChromeRules` the service runs, so the
/// island moves in the frame the finger moved and not a round trip later.
///
/// Reconciled as games reconcile client-side prediction: every state the
/// service announces becomes the base, the reports it already includes
/// (its `lastSeq` reaches their `seq`) are forgotten, and the others are
/// applied again on top. So the service wins whenever it differs (another
/// device moved the session, the behaviour or the inset changed), and the
/// island still does not fall back to where the finger was a round trip
/// ago, as it would if the bare state replaced the prediction while reports
/// are on their way, only to jump forward again at their answer.
struct ChromePrediction {
    typealias State = TopChromeCore.ChromeState

    /// A report made here that the base does not include yet. Its `seq` is
    /// set when the session numbers it; until then no state can include it.
    private struct Unanswered {
        var ticket: UInt64
        var seq: UInt64?
        var report: ScrollReport
    }

    private let rules = ChromeRules()
    /// The service's latest state.
    private var base: State?
    private var unanswered: [Unanswered] = []
    private var lastTicket: UInt64 = 0
    var unansweredCount: Int { unanswered.count }
    /// What to show: `base` with `unanswered` applied. Nil until the
    /// service's first state: the behaviour is not known before it.
    private(set) var predicted: State?

    /// Applies a report made here at once, and returns the ticket to give
    /// its `seq` by (`numbered`); nil with nothing to predict from yet.
    mutating func predict(_ report: ScrollReport) -> UInt64? {
        guard let predicted else { return nil }
        lastTicket += 1
        // Without its seq: whatever number it gets, it comes after what the
        // prediction stands on.
        var report = report
        report.seq = nil
        unanswered.append(Unanswered(ticket: lastTicket, seq: nil, report: report))
        self.predicted = rules.apply(.scroll(report), to: predicted)
        // Offline, reports pile up with no state to answer them: past what
        // one request carries, the oldest is taken as done, so memory and
        // the work of a reconciliation stay bounded.
        if unanswered.count > ScrollBatch.limit, let base {
            self.base = rules.apply(.scroll(unanswered.removeFirst().report), to: base)
        }
        return lastTicket
    }

    /// The session numbered the report `ticket`. A state that came before
    /// the number and already includes it (the session answered faster
    /// than this was told) has it applied twice in `predicted`: take it out.
    mutating func numbered(_ ticket: UInt64, seq: UInt64) {
        guard let index = unanswered.firstIndex(where: { $0.ticket == ticket }) else { return }
        unanswered[index].seq = seq
        guard let base, let applied = base.lastAppliedSeq, seq <= applied else { return }
        unanswered.remove(at: index)
        predicted = replaying(unanswered, on: base)
    }

    /// Reports that will never reach the service: the service's state will
    /// never include them, so the prediction stops showing them.
    mutating func forget(_ seqs: Set<UInt64>) {
        let before = unanswered.count
        unanswered.removeAll { $0.seq.map(seqs.contains) ?? false }
        guard unanswered.count != before, let base else { return }
        predicted = replaying(unanswered, on: base)
    }

    /// The service's state, from the event stream (in order, each version once).
    mutating func reconcile(with state: SessionState) {
        let isIncluded = { (entry: Unanswered) in entry.seq.map { $0 <= state.lastSeq ?? 0 } ?? false }
        let included = unanswered.filter(isIncluded)
        unanswered.removeAll(where: isIncluded)
        // The offset `enterAlways` takes the next delta from is not in the
        // state: it is the last report the service applied, which is known
        // here when that report was made here (or none came since).
        let walked = base.map { replaying(included, on: $0) }
        let sameWalk = walked?.behavior == state.behavior && state.lastSeq == (included.last?.seq ?? base?.lastAppliedSeq)
        let served = State(served: state, lastOffset: sameWalk ? walked?.lastOffset : nil)
        base = served
        predicted = replaying(unanswered, on: served)
    }

    private func replaying(_ reports: [Unanswered], on state: State) -> State {
        rules.apply(reports.map { .scroll($0.report) }, to: state)
    }

    /// The screen went away: the chrome shows at once. Unanswered reports
    /// are moot (a disappearance after them leaves the same chrome), and
    /// the service's next state is taken as it is.
    mutating func disappear() {
        unanswered.removeAll()
        guard let predicted else { return }
        base = rules.apply(.disappear, to: predicted)
        self.predicted = base
    }

    /// Another session is followed: nothing carries over.
    mutating func reset() {
        self = ChromePrediction()
    }
}
