// The reference for tests/expr_reference.rs: muParser itself (the engine
// behind FG's expr_feature), built by scripts/muparser.sh against Debian's
// libmuparser. Reads lines `expression<TAB>name=value;name=value...` and
// answers each with `ok <the result's 64 bits in hex>` or `err <message>`.
// The first line out is the library's version.
#include <muParser.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

int main() {
    std::printf("muParser %s\n", mu::ParserVersion.c_str());
    std::fflush(stdout);
    std::string line;
    while (std::getline(std::cin, line)) {
        const auto tab = line.find('\t');
        const std::string text = line.substr(0, tab);
        std::vector<std::pair<std::string, double>> vars;
        if (tab != std::string::npos) {
            const std::string rest = line.substr(tab + 1);
            size_t at = 0;
            while (at < rest.size()) {
                size_t end = rest.find(';', at);
                if (end == std::string::npos) end = rest.size();
                const std::string pair = rest.substr(at, end - at);
                const auto eq = pair.find('=');
                vars.emplace_back(pair.substr(0, eq), std::stod(pair.substr(eq + 1)));
                at = end + 1;
            }
        }
        try {
            mu::Parser p;
            for (auto& v : vars) p.DefineVar(v.first, &v.second);
            p.SetExpr(text);
            const double r = p.Eval();
            std::uint64_t bits;
            std::memcpy(&bits, &r, sizeof bits);
            std::printf("ok %016llx\n", static_cast<unsigned long long>(bits));
        } catch (mu::Parser::exception_type& e) {
            std::printf("err %s\n", e.GetMsg().c_str());
        }
        std::fflush(stdout);
    }
}
