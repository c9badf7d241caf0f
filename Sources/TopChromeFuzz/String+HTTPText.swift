extension String {
    var isPlainASCII: Bool { utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F || $0 == 0x09 } }
}

extension StringProtocol {
    /// Without leading and trailing spaces and tabs (HTTP's OWS).
    var withoutOWS: SubSequence {
        var text = self[...]
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }

    var asciiLowercased: String {
        String(decoding: utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}
