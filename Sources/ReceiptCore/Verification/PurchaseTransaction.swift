/// One purchase, as every input states it, in one type: a unified receipt's `in_app` and `latest_receipt_info`
/// entries, an iOS 6 transaction receipt, a StoreKit 2 signed transaction, and Apple's `verifyReceipt` answers.
///
/// Field names follow Apple's StoreKit 2 names
/// ([JWSTransaction](https://developer.apple.com/documentation/appstoreserverapi/jwstransaction)); the receipt forms
/// map onto them ([responseBody.Receipt.In_app](https://developer.apple.com/documentation/appstorereceipts/responsebody/receipt/in_app):
/// `cancellation_date_ms` is the revocation date, `cancellation_reason` its reason). Dates are milliseconds since
/// 1970, as both forms can state them exactly. What an input does not state is nil.
public struct PurchaseTransaction: Sendable, Equatable {
    /// `transactionId` / `transaction_id`.
    public var transactionID: String
    /// `originalTransactionId` / `original_transaction_id`.
    public var originalTransactionID: String
    /// `productId` / `product_id`.
    public var productID: String
    /// `purchaseDate` / `purchase_date_ms`.
    public var purchaseDate: Int64?
    /// `originalPurchaseDate` / `original_purchase_date_ms`.
    public var originalPurchaseDate: Int64?
    /// `expiresDate` / `expires_date_ms` (an iOS 6 receipt's `expires_date`, which holds milliseconds).
    public var expiresDate: Int64?
    /// `quantity`.
    public var quantity: Int
    /// `webOrderLineItemId` / `web_order_line_item_id`.
    public var webOrderLineItemID: String?
    /// `inAppOwnershipType` (`PURCHASED`, `FAMILY_SHARED`); StoreKit 2 only.
    public var inAppOwnershipType: String?
    /// `revocationDate` / `cancellation_date_ms`: when Apple refunded or revoked it.
    public var revocationDate: Int64?
    /// `revocationReason` / `cancellation_reason`: 1 an issue in the app, 0 another reason.
    public var revocationReason: Int?
    /// `revocationType` (`REFUND_FULL`, `REFUND_PRORATED`, `FAMILY_REVOKE`), when Apple states it.
    public var revocationType: String?
    /// `revocationPercentage`, in thousandths of a percent, for a prorated refund.
    public var revocationPercentage: Int?
    /// `appAccountToken`: the app's own user id, when the app set one at purchase (StoreKit 2 only).
    public var appAccountToken: String?
    /// `type`: the product's kind as StoreKit 2 states it (`Auto-Renewable Subscription`, `Non-Consumable`,
    /// `Consumable`, `Non-Renewing Subscription`); receipts do not state it.
    public var productType: String?
    /// `offerType`: 1 an introductory offer, 2 a promotional offer, 3 an offer code, 4 a win-back offer; a receipt's
    /// `is_trial_period` and `is_in_intro_offer_period` state 1, its `promotional_offer_id` 2, its
    /// `offer_code_ref_name` 3.
    public var offerType: Int?
    /// `offerDiscountType` (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`); a receipt's `is_trial_period` states
    /// `FREE_TRIAL`.
    public var offerDiscountType: String?
    /// `appTransactionId`: the customer's download of the app this purchase belongs to (StoreKit 2, 2025).
    public var appTransactionID: String?
    /// `offerPeriod`: the ISO 8601 duration of the offer the transaction redeemed (`P1M`, …).
    public var offerPeriod: String?
    /// `billingPlanType`: `MONTHLY` for a period of a commitment billed monthly, `BILLED_UPFRONT` otherwise (API 1.21).
    public var billingPlanType: String?
    /// `commitmentInfo`: the commitment a period billed monthly belongs to (API 1.21).
    public var commitment: Commitment?
    /// Google Play: the purchase token (one per purchase; a subscription's renewals share it).
    public var purchaseToken: String?
    /// Google Play: the Android package the purchase was made in.
    public var packageName: String?
    /// Google Play: the token of the purchase this one replaced (an upgrade, downgrade or re-subscription).
    public var linkedPurchaseToken: String?
    /// Google Play: the tokens before ``linkedPurchaseToken`` in its chain, each the one its successor replaced, read
    /// from Google where the ledger does not hold the linked purchase (A→B→C with B never presented: money review
    /// M16). Not stored: the ledger ends the subscriptions of these tokens as it ends the linked one's.
    public var earlierLinkedPurchaseTokens: [String] = []
    /// Google Play: whether Google says the purchase is acknowledged (not stored: the ledger keeps its own state).
    public var isAcknowledged: Bool?
    /// When the statement of this transaction was signed, in milliseconds since 1970: a JWS's `signedDate`, a
    /// receipt's creation date, the time Apple answered; nil when unknown. A revocation it states (or lacks) is
    /// weighed against newer statements by it (docs/notifications.md, "Effects").
    public var signedDate: Int64?

    /// Creates a transaction.
    public init(
        transactionID: String, originalTransactionID: String, productID: String, purchaseDate: Int64? = nil,
        originalPurchaseDate: Int64? = nil, expiresDate: Int64? = nil, quantity: Int = 1,
        webOrderLineItemID: String? = nil, inAppOwnershipType: String? = nil, revocationDate: Int64? = nil,
        revocationReason: Int? = nil, revocationType: String? = nil, revocationPercentage: Int? = nil,
        appAccountToken: String? = nil, signedDate: Int64? = nil, productType: String? = nil, offerType: Int? = nil,
        offerDiscountType: String? = nil
    ) {
        self.productType = productType
        self.offerType = offerType
        self.offerDiscountType = offerDiscountType
        self.transactionID = transactionID
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.webOrderLineItemID = webOrderLineItemID
        self.inAppOwnershipType = inAppOwnershipType
        self.revocationDate = revocationDate
        self.revocationReason = revocationReason
        self.revocationType = revocationType
        self.revocationPercentage = revocationPercentage
        self.appAccountToken = appAccountToken
        self.signedDate = signedDate
    }

    /// Takes the revocation `other` states (date, reason, type, percentage), or none when `other` is nil.
    public mutating func takeRevocation(of other: PurchaseTransaction?) {
        revocationDate = other?.revocationDate
        revocationReason = other?.revocationReason
        revocationType = other?.revocationType
        revocationPercentage = other?.revocationPercentage
    }

    /// A transaction from an object in `verifyReceipt`'s field names (an `in_app` or `latest_receipt_info` entry, or an
    /// iOS 6 receipt); nil without a transaction id and a product id.
    public init?(verifyReceiptFields object: JSONObject) {
        guard let transactionID = Self.text(object["transaction_id"]), let productID = Self.text(object["product_id"])
        else { return nil }
        self.init(
            transactionID: transactionID,
            originalTransactionID: Self.text(object["original_transaction_id"]) ?? transactionID, productID: productID,
            purchaseDate: Self.number(object["purchase_date_ms"]),
            originalPurchaseDate: Self.number(object["original_purchase_date_ms"]),
            // An iOS 6 receipt states the expiry in milliseconds under `expires_date`; a unified one under
            // `expires_date_ms` (its `expires_date` is a formatted date, which `number` does not read).
            expiresDate: Self.number(object["expires_date_ms"]) ?? Self.number(object["expires_date"]),
            quantity: Self.number(object["quantity"]).map { Int($0) } ?? 1,
            webOrderLineItemID: Self.text(object["web_order_line_item_id"]),
            revocationDate: Self.number(object["cancellation_date_ms"]),
            revocationReason: Self.number(object["cancellation_reason"]).map { Int($0) })
        if Self.flag(object["is_trial_period"]) {
            (offerType, offerDiscountType) = (1, "FREE_TRIAL")
        } else if Self.flag(object["is_in_intro_offer_period"]) {
            offerType = 1
        } else if Self.text(object["promotional_offer_id"]) != nil {
            offerType = 2
        } else if Self.text(object["offer_code_ref_name"]) != nil {
            offerType = 3
        }
    }

    /// A receipt's flag, `"true"` (Apple's answers) or `true`.
    private static func flag(_ value: JSONValue?) -> Bool {
        switch value {
        case .string(let text)?: text == "true"
        case .bool(let flag)?: flag
        default: false
        }
    }

    /// A transaction from a StoreKit 2 signed transaction's payload; nil without a transaction id and a product id.
    public init?(jwsPayload payload: JSONObject) {
        guard let transactionID = Self.text(payload["transactionId"]), let productID = Self.text(payload["productId"])
        else { return nil }
        self.init(
            transactionID: transactionID,
            originalTransactionID: Self.text(payload["originalTransactionId"]) ?? transactionID, productID: productID,
            purchaseDate: Self.number(payload["purchaseDate"]),
            originalPurchaseDate: Self.number(payload["originalPurchaseDate"]),
            expiresDate: Self.number(payload["expiresDate"]),
            quantity: Self.number(payload["quantity"]).map { Int($0) } ?? 1,
            webOrderLineItemID: Self.text(payload["webOrderLineItemId"]),
            inAppOwnershipType: Self.text(payload["inAppOwnershipType"]),
            revocationDate: Self.number(payload["revocationDate"]),
            revocationReason: Self.number(payload["revocationReason"]).map { Int($0) },
            revocationType: Self.text(payload["revocationType"]),
            revocationPercentage: Self.number(payload["revocationPercentage"]).map { Int($0) },
            appAccountToken: Self.text(payload["appAccountToken"]), productType: Self.text(payload["type"]),
            offerType: Self.number(payload["offerType"]).map { Int($0) },
            offerDiscountType: Self.text(payload["offerDiscountType"]))
        appTransactionID = Self.text(payload["appTransactionId"])
        offerPeriod = Self.text(payload["offerPeriod"])
        billingPlanType = Self.text(payload["billingPlanType"])
        if case .object(let info)? = payload["commitmentInfo"] {
            commitment = Commitment(
                billingPeriodNumber: Self.number(info["billingPeriodNumber"]).map { Int($0) },
                totalBillingPeriods: Self.number(info["totalBillingPeriods"]).map { Int($0) },
                expiresDate: Self.number(info["commitmentExpiresDate"]), price: Self.number(info["commitmentPrice"]))
        }
    }

    /// Every distinct transaction of a verified input, by transaction id in first-seen order: a unified receipt's
    /// `in_app`, an iOS 6 receipt's one, a StoreKit 2 signed transaction's one (none for other JWS kinds).
    public static func all(in verified: VerifiedReceipt) -> [PurchaseTransaction] {
        signed(statedBy(verified), at: verified.signingDate)
    }

    /// `transactions`, each stated at `date`.
    private static func signed(_ transactions: [PurchaseTransaction], at date: Int64?) -> [PurchaseTransaction] {
        transactions.map { transaction in
            var transaction = transaction
            transaction.signedDate = date
            return transaction
        }
    }

    private static func statedBy(_ verified: VerifiedReceipt) -> [PurchaseTransaction] {
        switch verified.kind {
        case .unifiedReceipt:
            return distinct(verified.receipt["in_app"]?.arrayValue ?? [])
        case .transactionReceipt:
            return PurchaseTransaction(verifyReceiptFields: verified.receipt).map { [$0] } ?? []
        case .signedTransaction:
            return PurchaseTransaction(jwsPayload: verified.receipt).map { [$0] } ?? []
        case .signedRenewalInfo, .appTransaction, .notification:
            return []
        }
    }

    /// Every distinct transaction of a `verifyReceipt`-shaped answer: `receipt.in_app` (or an iOS 6 `receipt`) and
    /// `latest_receipt_info` merged by transaction id, in first-seen order.
    public static func all(inAnswer body: JSONObject, answeredAt: Int64? = nil) -> [PurchaseTransaction] {
        var objects: [JSONValue] = []
        if case .object(let receipt)? = body["receipt"] {
            if let inApp = receipt["in_app"]?.arrayValue {
                objects += inApp
            } else {
                objects.append(.object(receipt))
            }
        }
        objects += body["latest_receipt_info"]?.arrayValue ?? []
        return signed(distinct(objects), at: answeredAt)
    }

    /// The transactions of `objects`, one per transaction id in first-seen order; a revocation stated by a later
    /// duplicate only (Apple's `latest_receipt_info` beside `in_app`) is kept.
    private static func distinct(_ objects: [JSONValue]) -> [PurchaseTransaction] {
        var index: [String: Int] = [:]
        var transactions: [PurchaseTransaction] = []
        for case .object(let object) in objects {
            guard let transaction = PurchaseTransaction(verifyReceiptFields: object) else { continue }
            if let at = index[transaction.transactionID] {
                if transactions[at].revocationDate == nil, transaction.revocationDate != nil {
                    transactions[at].revocationDate = transaction.revocationDate
                    transactions[at].revocationReason = transaction.revocationReason
                }
                continue
            }
            index[transaction.transactionID] = transactions.count
            transactions.append(transaction)
        }
        return transactions
    }

    /// A string, or an integer's decimal text (Apple writes ids both ways).
    private static func text(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let text)?: text
        case .integer(let number)?: String(number)
        default: nil
        }
    }

    /// An integer, or a string holding one (the receipt forms write numbers as strings).
    private static func number(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number)?: number
        case .string(let text)?: Int64(text)
        default: nil
        }
    }
}

/// A subscription period's commitment (Apple's `commitmentInfo`, API 1.21): a plan billed monthly over a committed
/// term (twelve months), whose periods end monthly while the commitment runs on to `expiresDate`.
public struct Commitment: Sendable, Equatable {
    /// `billingPeriodNumber`: which monthly period of the commitment this is (1 the first).
    public var billingPeriodNumber: Int?
    /// `totalBillingPeriods`: how many the commitment has.
    public var totalBillingPeriods: Int?
    /// `commitmentExpiresDate`: when the commitment ends, milliseconds since 1970.
    public var expiresDate: Int64?
    /// `commitmentPrice`: the commitment's whole price, in milliunits of the currency.
    public var price: Int64?

    /// Creates a commitment.
    public init(billingPeriodNumber: Int?, totalBillingPeriods: Int?, expiresDate: Int64?, price: Int64?) {
        self.billingPeriodNumber = billingPeriodNumber
        self.totalBillingPeriods = totalBillingPeriods
        self.expiresDate = expiresDate
        self.price = price
    }
}
