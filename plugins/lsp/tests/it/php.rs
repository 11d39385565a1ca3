//! `intelephense` (npm) through the plugin: its results are final only once its indexing has
//! ended (it pushes before that without what the index knows: undefined functions and
//! classes); a syntax error; a fix clears them. intelephense has no command line to compare
//! with: the expected items are its documented diagnostics codes on planted mistakes.

use crate::support;
use serde_json::json;
use support::{all, e, Env};

const LIB: &str = "<?php
namespace App;

class Invoice
{
    public function __construct(private array $lines) {}

    public function total(): float
    {
        return array_sum(array_map(fn ($l) => $l['price'] * $l['qty'], $this->lines));
    }
}
";

const MAIN: &str = "<?php
require __DIR__ . '/Invoice.php';

use App\\Invoice;

$invoice = new Invoice([['price' => 2.5, 'qty' => 4]]);
echo format_money($invoice->total());
$report = new Report($invoice);
";

#[test]
fn intelephense_results_wait_for_its_index() {
    let env = Env::new(json!({}));
    env.write(
        "composer.json",
        r#"{"name": "acme/billing", "autoload": {"psr-4": {"App\\": "src/"}}}"#,
    );
    env.write("src/Invoice.php", LIB);
    let main = env.write("src/main.php", MAIN);
    // The very first check starts the server: its first push comes before indexing ends
    // and lacks the index's findings; the plugin waits for the push after the index.
    let items = env.check(&main, 90_000);
    assert_eq!(all(&items), e(&[(7, "P1010"), (8, "P1009")]), "{items:#?}");
    assert!(items.iter().all(|i| i.source == "intelephense"));

    // A syntax error, then the fix.
    let broken = MAIN.replace("$invoice->total());", "$invoice->total();");
    env.write("src/main.php", &broken);
    let items = env.check(&main, 60_000);
    assert!(
        items.iter().any(|i| i.code.as_deref() == Some("P1001")),
        "{items:#?}"
    );
    let fixed = MAIN
        .replace("format_money(", "number_format(")
        .replace("$report = new Report($invoice);\n", "");
    env.write("src/main.php", &fixed);
    assert_eq!(env.check(&main, 60_000), vec![]);
}
