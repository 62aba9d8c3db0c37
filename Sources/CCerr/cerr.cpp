// std::cerr routed through `Router` (see CCerr.h): a thread that called pf_cerr_take gets its
// writes kept in its own string; every other write goes on to the stream buffer std::cerr had,
// unchanged (libstdc++'s, synchronised with C's stderr). The router is installed by a static
// object of this file, after <iostream>'s own initialisation (earlier in the same file) and before
// main; it is put back at exit, so nothing written to std::cerr late is lost.
#include "CCerr.h"

#include <cstring>
#include <iostream>
#include <streambuf>
#include <string>

namespace {

thread_local bool taking = false;
thread_local std::string kept;

class Router final : public std::streambuf {
public:
    explicit Router(std::streambuf *next) : next_(next) {}

protected:
    int_type overflow(int_type c) override {
        if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
        if (taking) {
            kept.push_back(traits_type::to_char_type(c));
            return c;
        }
        return next_ ? next_->sputc(traits_type::to_char_type(c)) : c;
    }

    std::streamsize xsputn(const char *s, std::streamsize n) override {
        if (taking) {
            kept.append(s, static_cast<size_t>(n));
            return n;
        }
        return next_ ? next_->sputn(s, n) : n;
    }

    int sync() override { return taking || !next_ ? 0 : next_->pubsync(); }

private:
    std::streambuf *next_;
};

struct Installed {
    std::streambuf *previous;
    Router router;
    Installed() : previous(std::cerr.rdbuf()), router(previous) { std::cerr.rdbuf(&router); }
    ~Installed() { std::cerr.rdbuf(previous); }
};

Installed installed;

} // namespace

extern "C" void pf_cerr_take(void) {
    kept.clear();
    taking = true;
}

extern "C" size_t pf_cerr_taken(char *buffer, size_t size) {
    taking = false;
    if (size > 0) {
        size_t n = kept.size() < size - 1 ? kept.size() : size - 1;
        std::memcpy(buffer, kept.data(), n);
        buffer[n] = '\0';
    }
    size_t length = kept.size();
    kept.clear();
    return length;
}
