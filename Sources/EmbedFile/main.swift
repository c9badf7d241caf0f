import Foundation

// Usage: EmbedFile INPUT... OUTPUT NAME
// Writes a Swift file declaring `let NAME: String` with the INPUTs' exact
// text, one after the other.
let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(Data("usage: EmbedFile INPUT... OUTPUT NAME\n".utf8))
    exit(2)
}
let inputs = arguments[1..<(arguments.count - 2)]
let output = arguments[arguments.count - 2], name = arguments[arguments.count - 1]
var text = ""
for input in inputs {
    guard let data = FileManager.default.contents(atPath: input), let part = String(data: data, encoding: .utf8) else {
        FileHandle.standardError.write(Data("EmbedFile: cannot read \(input) as UTF-8\n".utf8))
        exit(1)
    }
    text += part
}

var literal = ""
for scalar in text.unicodeScalars {
    switch scalar {
    case "\\": literal += "\\\\"
    case "\"": literal += "\\\""
    case " "..."~": literal.unicodeScalars.append(scalar)
    default: literal += "\\u{\(String(scalar.value, radix: 16))}"
    }
}
let source = """
// Generated from \(inputs.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: " and ")) at build time; do not edit.
let \(name): String = "\(literal)"

"""
do {
    try Data(source.utf8).write(to: URL(fileURLWithPath: output), options: .atomic)
} catch {
    FileHandle.standardError.write(Data("EmbedFile: cannot write \(output): \(error)\n".utf8))
    exit(1)
}
