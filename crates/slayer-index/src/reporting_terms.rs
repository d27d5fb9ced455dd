//! The everyday words of business reporting that name the same figure. A measure is named in a
//! team's jargon (`churnedMrr`, `contractionMrr`, `activeCustomers`, `total_returns`); an analyst
//! asks in plain words ("revenue lost from customers who cancelled", "lost to downgrades",
//! "paying subscribers", "value of refunded goods"). A measure's `related` field (full text)
//! carries the plain words of its name's jargon, so either phrasing finds it; a field of its own,
//! so a name the question says outright keeps its weight (docs/spec/channels.md §6.2).
//!
//! The table is the general vocabulary of SaaS, e-commerce, retail, marketing, finance,
//! support and HR reporting, one group per name word, written from that vocabulary and not
//! from any one project. Only measures get it: a measure is what a metric question
//! paraphrases, while a column is found by its description and its values, and a wider
//! vocabulary on every column would only blur which column a question names. A word is
//! matched whole (`churned`, not `churnedx`); the analyzer's stemmer joins the forms of the
//! words added.

/// `(name word, the plain words it stands for)`, sorted by name word for a binary search.
const RELATED: &[(&str, &str)] = &[
    ("acquisition", "new customers signups"),
    ("attrition", "churn cancellations lost customers leavers"),
    ("backlog", "open pending unresolved"),
    ("bookings", "orders sales contracts signed"),
    ("bounce", "left without engaging"),
    ("cancellation", "churn cancelled lost"),
    ("cancellations", "churn cancelled lost"),
    ("cancelled", "churned lost"),
    ("charge", "payment"),
    ("chargeback", "dispute disputed payment"),
    ("chargebacks", "disputes disputed payments"),
    ("charges", "payments"),
    ("churn", "cancelled cancellations lost attrition"),
    ("churned", "cancelled cancellations lost attrition"),
    ("clients", "customers accounts"),
    ("contraction", "downgrades downgraded decrease reduced"),
    ("conversion", "converted converting"),
    ("conversions", "converted converting"),
    ("customer", "client subscriber buyer shopper account"),
    ("customers", "clients subscribers buyers shoppers accounts"),
    ("declined", "failed rejected"),
    ("deliveries", "shipments shipped"),
    ("delivery", "shipment shipped shipping"),
    ("discount", "promotion coupon markdown"),
    ("discounts", "promotions coupons markdowns"),
    ("downgrade", "contraction decrease"),
    ("downgrades", "contraction decrease"),
    ("due", "owed outstanding unpaid"),
    ("employees", "staff headcount workforce workers"),
    ("expansion", "upgrades upgraded upsell increase"),
    ("expense", "cost spend spending"),
    ("expenses", "costs spend spending"),
    ("failed", "declined unsuccessful rejected"),
    ("fees", "charges commission"),
    ("headcount", "employees staff workforce"),
    ("income", "revenue earnings"),
    ("inventory", "stock on hand"),
    ("invoice", "bill billed billing"),
    ("invoices", "bills billed billing"),
    ("leads", "prospects"),
    ("margin", "profit"),
    ("median", "middle midpoint typical"),
    ("orders", "purchases"),
    ("outstanding", "owed unpaid due"),
    ("payment", "charge paid"),
    ("payments", "charges paid"),
    ("payroll", "salaries wages compensation"),
    ("profit", "margin earnings"),
    ("purchase", "buy bought procurement"),
    ("purchases", "buys bought procurement"),
    ("quantity", "units items pieces"),
    ("reactivation", "returning won back reactivated"),
    ("reactivations", "returning won back reactivated"),
    ("refund", "returned money back"),
    ("refunded", "returned money back"),
    ("refunds", "returned money back"),
    ("registrations", "signups joined"),
    ("renewal", "renewed retained"),
    ("renewals", "renewed retained"),
    ("retention", "retained kept stayed"),
    ("return", "returned refund"),
    ("returns", "returned refunds"),
    ("revenue", "sales income turnover"),
    ("salary", "pay wages compensation"),
    ("sales", "revenue sold"),
    ("sessions", "visits"),
    ("shipments", "deliveries shipped"),
    ("signups", "registrations joined new users"),
    ("spend", "cost spending expense"),
    ("staff", "employees headcount"),
    ("stock", "inventory"),
    ("subscribers", "customers subscriptions members"),
    ("subscriptions", "subscribers plans members"),
    ("supplier", "vendor"),
    ("suppliers", "vendors"),
    ("tickets", "cases requests issues"),
    ("transaction", "purchase payment sale"),
    ("transactions", "purchases payments sales"),
    ("units", "quantity items pieces"),
    ("upgrade", "expansion upsell"),
    ("upgrades", "expansion upsell"),
    ("upsell", "expansion upgrades"),
    ("vendor", "supplier"),
    ("vendors", "suppliers"),
    ("visits", "sessions traffic"),
];

/// The plain words of one lowercase name word, when it is reporting jargon.
pub fn related(word: &str) -> Option<&'static str> {
    crate::abbreviations::look_up(RELATED, word)
}

/// The plain words of the jargon among `words` (a name or label as lowercase words,
/// `render::words`: `churned mrr`), space-separated; empty when there is none.
pub fn related_in(words: &str) -> String {
    crate::abbreviations::each_found(words, related)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_lowercase_and_one_group_a_word() {
        assert!(RELATED.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(RELATED
            .iter()
            .all(|(w, plain)| *w == w.to_lowercase() && *plain == plain.to_lowercase()));
    }

    #[test]
    fn whole_words_only_get_their_plain_words() {
        assert_eq!(
            related_in("churned mrr"),
            "cancelled cancellations lost attrition"
        );
        assert_eq!(related_in("contraction mrr"), related_in("contraction"));
        assert_eq!(related_in("churnedx mrr total"), "");
        // A word's group is added once however often the name says it.
        assert_eq!(related_in("refund refund"), "returned money back");
    }
}
