extension StringProtocol {
    /// The text without the optional whitespace around it: spaces and tabs
    /// only (RFC 9110 §5.6.3), which is all a field value or a list element
    /// may carry there.
    var trimmingOWS: SubSequence {
        var text = self[...]
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
