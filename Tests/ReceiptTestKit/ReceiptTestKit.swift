/// Builders for test PKIs, unified receipts and StoreKit 2 JWS, shared by the tests and the benchmark.
public enum ReceiptTestKit {}
