import { planInThisProcess, PlanRequest } from "./inProcess";
import { pieceTakenNotice } from "./piece";

/**
 * Child process of the plan: runs one program under the mock runtime (the SDK's state is global,
 * so each plan gets a fresh process) and sends the recorded resources back; for a piece, first a
 * notice when the program took it.
 */
process.once("message", (req: PlanRequest) => {
    planInThisProcess(req, () => process.send!(pieceTakenNotice)).then(
        (result) => process.send!(result, () => process.exit(0)),
        (e) => {
            console.error(e);
            process.exit(1);
        },
    );
});

