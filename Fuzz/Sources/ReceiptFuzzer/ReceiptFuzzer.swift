import ReceiptCore

/// libFuzzer's entry point: every parser of untrusted input gets the bytes.
@_cdecl("LLVMFuzzerTestOneInput")
public func receiptFuzzerTestOneInput(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let bytes = Array(UnsafeRawBufferPointer(start: start, count: count))
    ParserFuzzing.exercise(bytes)
    return 0
}

/// libFuzzer's driver, from the runtime that `-sanitize=fuzzer` links.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt
) -> CInt

/// SwiftPM links executables with `main` renamed to `<Target>_main`; this hands control to libFuzzer's driver.
@_cdecl("ReceiptFuzzer_main")
public func receiptFuzzerMain(
    _ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { start, size in receiptFuzzerTestOneInput(start, size) }
}
