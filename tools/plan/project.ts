/**
 * The Pulumi project a plan runs its program as. Under the CLI a program's `new pulumi.Config()`
 * reads the keys of its project (`name:` in the Pulumi.yaml the CLI finds in the program's
 * directory or above), and a stack file key without a namespace is that project's. The offline
 * plan does the same: the project of `--program FILE` is the `name:` of the first Pulumi.yaml
 * (.yml, .json) in FILE's directory or above, as the CLI walks up; `--project NAME` overrides it.
 */
import * as fs from "fs";
import * as path from "path";
import { loadBoundedYaml, YamlError } from "../../components/config/yaml";
import { CliInputError } from "./cliInputs";

/** Pulumi's rule for project names (tokens.ValidateProjectName). */
const projectNamePattern = /^[A-Za-z0-9_.-]{1,100}$/;

const projectFiles = ["Pulumi.yaml", "Pulumi.yml", "Pulumi.json"];

/** Why `name` cannot be a Pulumi project name, or undefined. */
export function projectNameProblem(name: string): string | undefined {
    return projectNamePattern.test(name) ? undefined : `${JSON.stringify(name)} is not a Pulumi project name (letters, digits, "_", "." and "-", at most 100)`;
}

/** The first project file in `dir` or a directory above it. */
export function findProjectFile(dir: string): string | undefined {
    for (let at = path.resolve(dir); ; at = path.dirname(at)) {
        const found = projectFiles.map((f) => path.join(at, f)).find((f) => fs.existsSync(f));
        if (found !== undefined || path.dirname(at) === at) {
            return found;
        }
    }
}

/**
 * The project to plan `program` as: `flag` (`--project NAME`) when given, else the `name:` of the
 * program's project file. Refuses (one line, naming the file) a project file it cannot read or
 * without a valid name, and a program with none.
 */
export function projectOfProgram(program: string, flag: string | undefined, programArg = path.relative(process.cwd(), program)): { name: string; file?: string } {
    if (flag !== undefined) {
        const problem = projectNameProblem(flag);
        if (problem) {
            throw new CliInputError(`--project ${flag}: ${problem}`);
        }
        return { name: flag };
    }
    const file = findProjectFile(path.dirname(program));
    const shown = (f: string) => path.relative(process.cwd(), f) || f;
    if (file === undefined) {
        throw new CliInputError(`--program ${programArg}: no Pulumi.yaml in its directory or above, so no project name for its config; give it with --project NAME`);
    }
    let doc: unknown;
    try {
        doc = loadBoundedYaml(fs.readFileSync(file, "utf8"), shown(file));
    } catch (e) {
        throw new CliInputError(`--program ${programArg}: ${e instanceof YamlError ? e.message : `cannot read ${shown(file)}: ${(e as Error).message}`}; or give the project with --project NAME`);
    }
    const name = (doc as { name?: unknown } | null)?.name;
    if (typeof name !== "string") {
        throw new CliInputError(`--program ${programArg}: ${shown(file)} has no name: (the project's name, as pulumi new writes it); or give the project with --project NAME`);
    }
    const problem = projectNameProblem(name);
    if (problem) {
        throw new CliInputError(`--program ${programArg}: ${shown(file)}: name: ${problem}`);
    }
    return { name, file };
}
