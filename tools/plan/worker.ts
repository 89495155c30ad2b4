import { planInThisProcess, PlanRequest } from "./inProcess";

/**
 * Child process of the plan: runs one program under the mock runtime (the SDK's state is global,
 * so each plan gets a fresh process) and sends the recorded resources back.
 */
process.once("message", (req: PlanRequest) => {
    planInThisProcess(req).then(
        (result) => process.send!(result, () => process.exit(0)),
        (e) => {
            console.error(e);
            process.exit(1);
        },
    );
});

