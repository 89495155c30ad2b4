/** What a storage type's monitoring definition is built from (plain data, no resources). */
export interface MonitoringContext {
    /** The storage namespace. */
    namespace: string;
    /** This stack deploys the type's driver (not `sharedResources: external`): its pods and metrics are watched here. */
    ownsDriver: boolean;
    /** Where docs/monitoring.md is published, for the alerts' runbook_url. */
    runbookBaseUrl?: string;
}
