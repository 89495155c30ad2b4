import { Dashboard } from "./dashboards";
import { RuleGroup } from "./rules";
import { ScrapeTarget } from "./targets";

/**
 * What monitoring watches of one storage type, as plain data its definition builds: the metrics
 * endpoints to scrape, the alert groups (its driver's and one per storage) and the type's dashboard.
 */
export interface TypeMonitoring {
    targets: ScrapeTarget[];
    groups: RuleGroup[];
    /** Only where the stack deploys the type's driver: one dashboard per type in the cluster. */
    dashboard?: Dashboard;
}
