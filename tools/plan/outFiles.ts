import * as fs from "fs";
import * as path from "path";

/**
 * Writes `file` as a new file and renames it into place: whatever was at that name (an old
 * output, or a symbolic link someone put there) is replaced, and a link's target is never
 * written. The temporary name is created exclusively (`wx`), so a link there fails the write.
 */
export function replaceFile(file: string, data: string, mode = 0o644): void {
    const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
    fs.writeFileSync(temporary, data, { flag: "wx", mode });
    try {
        fs.renameSync(temporary, file);
    } catch (e) {
        fs.rmSync(temporary, { force: true });
        throw e;
    }
}
