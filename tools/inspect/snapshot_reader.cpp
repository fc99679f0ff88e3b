// A reader for the parts of the .heapsnapshot JSON the inspector uses: it
// scans for the keys it knows and parses the flat integer arrays by hand
// (a general JSON parser would hold every number as an object).
#include "snapshot_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace cyclegc_inspect {
namespace {

class Scanner {
  public:
    Scanner(const std::string &text, const std::string &path) : text_(text), path_(path) {}

    // Moves just past `"key":[`; throws if the key is absent.
    void seek_array(const char *key) {
        std::string pattern = std::string("\"") + key + "\":";
        size_t at = text_.find(pattern);
        if (at == std::string::npos) fail(std::string("no \"") + key + "\"");
        pos_ = at + pattern.size();
        skip_space();
        expect('[');
    }
    // The next unsigned integer, or false at the array's end (consumed).
    bool next_number(uint64_t &value) {
        skip_space();
        if (peek() == ',') ++pos_, skip_space();
        if (peek() == ']') {
            ++pos_;
            return false;
        }
        if (peek() < '0' || peek() > '9') fail("expected a number");
        value = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') value = value * 10 + (text_[pos_++] - '0');
        return true;
    }
    // The next string of an array of strings (or false at its end); a
    // nested array (node_types[0]) is read as its strings, joined by '\n'.
    bool next_string(std::string &value) {
        skip_space();
        if (peek() == ',') ++pos_, skip_space();
        if (peek() == ']') {
            ++pos_;
            return false;
        }
        if (peek() == '[') {
            ++pos_;
            value.clear();
            std::string item;
            while (next_string(item)) value += (value.empty() ? "" : "\n") + item;
            return true;
        }
        expect('"');
        value.clear();
        while (peek() != '"') {
            char c = text_[pos_++];
            if (c == '\\') c = unescape(value);
            if (c) value += c;
        }
        ++pos_;
        return true;
    }
    double fraction() const { return text_.empty() ? 1 : double(pos_) / double(text_.size()); }
    [[noreturn]] void fail(const std::string &what) const {
        throw std::runtime_error(path_ + ": not a heap snapshot this reader understands: " + what + " (at byte " +
                                 std::to_string(pos_) + ")");
    }

  private:
    char peek() const {
        if (pos_ >= text_.size()) fail("unexpected end of file");
        return text_[pos_];
    }
    void skip_space() {
        while (pos_ < text_.size() && std::strchr(" \t\r\n", text_[pos_])) ++pos_;
    }
    void expect(char c) {
        if (peek() != c) fail(std::string("expected '") + c + "'");
        ++pos_;
    }
    // After a backslash: the escaped character (a \uXXXX is written as UTF-8
    // into `out`, and 0 returned).
    char unescape(std::string &out) {
        char c = text_[pos_++];
        switch (c) {
        case 'n': return '\n';
        case 't': return '\t';
        case 'r': return '\r';
        case 'b': return '\b';
        case 'f': return '\f';
        case 'u': {
            unsigned code = std::stoul(text_.substr(pos_, 4), nullptr, 16);
            pos_ += 4;
            if (code < 0x80) return static_cast<char>(code);
            if (code < 0x800) {
                out += static_cast<char>(0xC0 | (code >> 6));
            } else {
                out += static_cast<char>(0xE0 | (code >> 12));
                out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
            }
            out += static_cast<char>(0x80 | (code & 0x3F));
            return 0;
        }
        default: return c;  // \" \\ \/
        }
    }
    const std::string &text_;
    const std::string &path_;
    size_t pos_ = 0;
};

std::string read_file(const std::string &path, const std::function<void(const char *, double)> &progress) {
    std::FILE *file = std::fopen(path.c_str(), "rb");
    if (!file) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
    std::fseek(file, 0, SEEK_END);
    long size = std::ftell(file);
    std::fseek(file, 0, SEEK_SET);
    std::string text(size > 0 ? size_t(size) : 0, '\0');
    constexpr size_t kChunk = size_t(16) << 20;
    for (size_t done = 0; done < text.size();) {
        size_t n = std::fread(&text[done], 1, std::min(kChunk, text.size() - done), file);
        if (n == 0) break;
        done += n;
        progress("reading", double(done) / double(text.size()));
    }
    std::fclose(file);
    return text;
}

// The position of each of `wanted` in the list of field names at `key`.
std::vector<int> field_positions(Scanner &in, const char *key, std::initializer_list<const char *> wanted,
                                 size_t &field_count) {
    in.seek_array(key);
    std::vector<std::string> fields;
    for (std::string field; in.next_string(field);) fields.push_back(field);
    field_count = fields.size();
    std::vector<int> positions;
    for (const char *name : wanted) {
        int at = -1;
        for (size_t i = 0; i < fields.size(); ++i)
            if (fields[i] == name) at = static_cast<int>(i);
        if (at < 0) in.fail(std::string(key) + " has no \"" + name + "\"");
        positions.push_back(at);
    }
    return positions;
}

std::vector<std::string> split_lines(const std::string &joined) {
    std::vector<std::string> items;
    size_t start = 0;
    for (size_t at; (at = joined.find('\n', start)) != std::string::npos; start = at + 1)
        items.push_back(joined.substr(start, at - start));
    items.push_back(joined.substr(start));
    return items;
}

void read_nodes(Scanner &in, Snapshot &s, const std::vector<int> &at, size_t field_count,
                std::vector<uint64_t> &edge_counts, const std::function<void(const char *, double)> &progress) {
    in.seek_array("nodes");
    std::vector<uint64_t> row(field_count);
    for (size_t field = 0;; field = (field + 1) % field_count) {
        if (!in.next_number(row[field])) break;
        if (field + 1 < field_count) continue;
        s.type.push_back(static_cast<uint32_t>(row[at[0]]));
        s.name.push_back(static_cast<uint32_t>(row[at[1]]));
        s.id.push_back(row[at[2]]);
        s.self_size.push_back(static_cast<uint32_t>(row[at[3]]));
        edge_counts.push_back(row[at[4]]);
        if ((s.id.size() & 0xFFFFF) == 0) progress("parsing nodes", in.fraction());
    }
}

void read_edges(Scanner &in, Snapshot &s, const std::vector<int> &at, size_t field_count, uint64_t weak_type,
                size_t node_field_count, const std::vector<uint64_t> &edge_counts,
                const std::function<void(const char *, double)> &progress) {
    in.seek_array("edges");
    s.edge_start.assign(s.node_count() + 1, 0);
    std::vector<uint64_t> row(field_count);
    size_t node = 0;
    uint64_t left = s.node_count() ? edge_counts[0] : 0, read = 0;
    for (size_t field = 0;; field = (field + 1) % field_count) {
        if (!in.next_number(row[field])) break;
        if (field + 1 < field_count) continue;
        while (left == 0) {  // (nodes without edges)
            if (++node >= s.node_count()) in.fail("more edges than the nodes' edge counts");
            s.edge_start[node] = s.edges.size();
            left = edge_counts[node];
        }
        --left;
        uint64_t target = row[at[2]] / node_field_count;
        if (row[at[0]] != weak_type && target < s.node_count()) s.edges.push_back(static_cast<uint32_t>(target));
        if ((++read & 0xFFFFF) == 0) progress("parsing edges", in.fraction());
    }
    while (node < s.node_count()) s.edge_start[++node] = s.edges.size();
}

}  // namespace

Snapshot read_heapsnapshot(const std::string &path, const std::function<void(const char *, double)> &progress) {
    std::string text = read_file(path, progress);
    Scanner in(text, path);
    Snapshot s;
    size_t node_fields = 0, edge_fields = 0;
    std::vector<int> node_at = field_positions(in, "node_fields", {"type", "name", "id", "self_size", "edge_count"}, node_fields);
    std::vector<int> edge_at = field_positions(in, "edge_fields", {"type", "name_or_index", "to_node"}, edge_fields);
    std::string joined;
    in.seek_array("node_types");
    if (!in.next_string(joined)) in.fail("empty node_types");
    s.node_types = split_lines(joined);
    in.seek_array("edge_types");
    if (!in.next_string(joined)) in.fail("empty edge_types");
    std::vector<std::string> edge_types = split_lines(joined);
    uint64_t weak = UINT64_MAX;
    for (size_t i = 0; i < edge_types.size(); ++i)
        if (edge_types[i] == "weak") weak = i;
    std::vector<uint64_t> edge_counts;
    read_nodes(in, s, node_at, node_fields, edge_counts, progress);
    read_edges(in, s, edge_at, edge_fields, weak, node_fields, edge_counts, progress);
    in.seek_array("strings");
    for (std::string item; in.next_string(item);) s.strings.push_back(std::move(item));
    for (uint32_t name : s.name)
        if (name >= s.strings.size()) in.fail("a node's name is past the strings");
    progress("parsed", 1.0);
    return s;
}

}  // namespace cyclegc_inspect
