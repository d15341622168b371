// output_file.h — every file pipesmith writes, written whole or not at all; output paths checked
// against each other and against the inputs before any work.
//
// Guarantees of write_output_file(path, text):
//  * `path` afterwards holds either what it held before or exactly `text`, never a prefix. The bytes
//    go to a temporary file in the target's directory; every write is checked, the file is flushed to
//    disk (fsync) and closed (checked), and only then renamed over the target (atomic on POSIX file
//    systems); the directory is synced after the rename.
//  * The temporary is anonymous (Linux O_TMPFILE) until it is whole, so a process killed while writing
//    leaves no file under any name; where O_TMPFILE is not available it is `.NAME.pipesmith-PID-N.tmp`
//    beside the target, removed on every failure this process sees.
//  * On failure the Status (exit 1) names the path and the system's reason (strerror).
//  * An existing target keeps its permission bits. A symbolic link is followed: the file it points to
//    is replaced, the link stays. A dangling link (its chain ends at a name that is no file) or a link
//    loop is refused, naming where it points: following it would create a file nobody named, and
//    replacing it would drop the link. A target that exists and is not a regular file (/dev/null, a
//    FIFO, a terminal) is written in place: there is nothing to replace.
//  * "-" is standard output: written, flushed and checked.
//
// Guarantees of write_output_files(set), for files that belong together (the export's two CSVs and
// plan.json):
//  * Every text goes whole into its own temporary (as above) before any target is touched; only when
//    all are written, flushed and closed is each renamed over its target. A failure before that (a
//    target that is a directory, a full disk, a failed fsync) removes every temporary and leaves
//    every target as it was.
//  * Before the renames each existing target gets a second name (a hard link, `.NAME.pipesmith-PID-oN.tmp`),
//    so that a failed rename puts back the targets already replaced (and removes the ones that did
//    not exist before); the status then says none was changed. On a file system without hard links
//    a file replaced before the failed rename keeps its new text, and the status names it.
//  * A kill between the first and the last rename leaves some targets new and some old, and the named
//    temporaries and second names beside them; the renames follow each other with no work between.
//
// Fault injection (tests of the guarantees above): the environment variable PIPESMITH_WRITE_FAULT makes
// the writer fail as a full disk or a crash would, for files (not stdout):
//    named      no anonymous temporary (as on a file system without O_TMPFILE); combines with one
//               below, comma-separated
//    enospc:N   every write after the first N bytes fails with ENOSPC
//    stall:N    after N bytes the writer says so on stderr and sleeps 60 s (a test kills it there)
//    fsync | close | rename   that step fails with EIO
//    on:NAME    the fault hits only files whose last path component is NAME ("rename,on:plan.json")
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ir/status.h"

namespace ps {

Status write_output_file(const std::string& path, std::string_view text);

// One file of a set: its path (a file, not "-") and the text it is to hold.
struct OutputText {
  std::string path;
  std::string_view text;
};

// Writes every file of `files` or none (the guarantees above); the paths name distinct files.
Status write_output_files(const std::vector<OutputText>& files);

// Writes to stdout and flushes; a failed write (a full disk, a closed pipe) is an error.
Status write_stdout(std::string_view text);

// At exit: flushes stdout and reports whether everything written to it arrived.
Status finish_stdout();

// An output the user named, and the flag that named it ("-o", "--svg"); "" or "-" names nothing to check.
struct OutputPath {
  std::string path;
  std::string flag;
};

// Before any work: every output can be written (its directory exists and is writable; it is not a
// directory), no two outputs name the same file, and no output names one of `inputs` (same device and
// inode, so another spelling or a hard link of an input is refused too).
Status check_output_paths(const std::vector<OutputPath>& outputs, const std::vector<std::string>& inputs);

}  // namespace ps
