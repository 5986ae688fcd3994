// Trace inputs by path: a directory, a .tar / .tar.gz archive, or one (optionally gzipped) file,
// read into memory as named texts in a stable order (sorted by name). Owns decompression (zlib)
// and tar parsing; every malformed archive is a ds::Error naming the archive and the entry.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ds {

struct TraceFile {
  std::string name;  // path, or "<archive>[<member>]" for archive members; used in error messages
  std::string text;  // decompressed contents
};

// Reads `path`. Directories (recursively) and archives yield only *.json / *.jsonl files (each
// optionally .gz); a single file is returned whatever its name. Throws ds::Error on I/O errors.
std::vector<TraceFile> read_trace_files(const std::string& path);

// Decompresses gzip (or zlib) data; `name` is for error messages. Output is capped at 2 GiB.
std::string gunzip(std::string_view data, const std::string& name);

// True if `data` starts with the gzip magic bytes.
bool is_gzip(std::string_view data);

// `name` without a trailing ".gz".
std::string_view strip_gz(std::string_view name);

}  // namespace ds
