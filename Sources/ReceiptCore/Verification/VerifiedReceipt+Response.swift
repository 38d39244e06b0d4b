extension VerifiedReceipt {
    /// Apple's `verifyReceipt` answer for this receipt: `status`, `description`, `environment`, `receipt`, and for
    /// StoreKit 2 items `kind`. Callers add their own fields (`request_id`, `repairs`, …).
    public var response: JSONObject {
        var object = JSONObject()
        object.append("status", .integer(Int64(VerificationStatus.valid.rawValue)))
        object.append("description", .string(VerificationStatus.valid.description))
        object.append("environment", .string(environment.rawValue))
        switch kind {
        case .unifiedReceipt, .transactionReceipt: break
        case .signedTransaction, .signedRenewalInfo, .appTransaction, .notification:
            object.append("kind", .string(kind.rawValue))
        }
        object.append("receipt", .object(receipt))
        return object
    }
}

extension ReceiptError {
    /// The answer for this failure: `status` and its fixed `description`, never the reason (that goes to logs).
    public var response: JSONObject {
        let status = VerificationStatus(self)
        var object = JSONObject()
        object.append("status", .integer(Int64(status.rawValue)))
        object.append("description", .string(status.description))
        return object
    }
}
