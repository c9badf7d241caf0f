import Foundation

// Usage: EmbedFile INPUT OUTPUT NAME
// Writes a Swift file declaring `let NAME: String` with INPUT's exact text.
let arguments = CommandLine.arguments
guard arguments.count == 4 else {
    FileHandle.standardError.write(Data("usage: EmbedFile INPUT OUTPUT NAME\n".utf8))
    exit(2)
}
guard let data = FileManager.default.contents(atPath: arguments[1]),
      let text = String(data: data, encoding: .utf8)
else {
    FileHandle.standardError.write(Data("EmbedFile: cannot read \(arguments[1]) as UTF-8\n".utf8))
    exit(1)
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
// Generated from \(URL(fileURLWithPath: arguments[1]).lastPathComponent) at build time; do not edit.
let \(arguments[3]): String = "\(literal)"

"""
do {
    try Data(source.utf8).write(to: URL(fileURLWithPath: arguments[2]), options: .atomic)
} catch {
    FileHandle.standardError.write(Data("EmbedFile: cannot write \(arguments[2]): \(error)\n".utf8))
    exit(1)
}
