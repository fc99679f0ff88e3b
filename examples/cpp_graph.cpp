// cyclegc example: a directed graph with cycles, in C++.
//
// Cities are linked by one-way roads (strong references). Roads form
// cycles, so reference counting alone cannot free the graph; one
// collection does. Returns non-zero if the expected frees do not happen.
#include <cyclegc/cyclegc.hpp>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace {

int g_live = 0;

struct City : cyclegc::object {
    std::string name;
    std::vector<cyclegc::ref<City>> roads;  // outgoing roads
    explicit City(std::string n) : name(std::move(n)) { ++g_live; }
    ~City() {
        --g_live;
        std::printf("  freed %s\n", name.c_str());
    }
    // The one member that names the references: the collector uses it both
    // to find cycles (visit) and to break them (clear).
    void trace(cyclegc::tracer &t) { t(roads); }
};

struct Map : cyclegc::object {
    std::map<std::string, cyclegc::ref<City>> cities;
    cyclegc::ref<City> city(const std::string &name) {
        auto &slot = cities[name];
        if (!slot) slot = cyclegc::make<City>(name);
        return slot;
    }
    void road(const std::string &from, const std::string &to) { city(from)->roads.push_back(city(to)); }
    void trace(cyclegc::tracer &t) { t(cities); }
};

bool expect(bool ok, const char *what) {
    std::printf("%s %s\n", ok ? "ok:  " : "FAIL:", what);
    return ok;
}

}  // namespace

int main() {
    cyclegc::disable();  // collect only when asked, to show each step
    bool ok = true;

    std::printf("building a map of 6 cities with circular routes\n");
    auto map = cyclegc::make<Map>();
    map->road("Lyon", "Paris");
    map->road("Paris", "Lille");
    map->road("Lille", "Lyon");  // Lyon -> Paris -> Lille -> Lyon
    map->road("Paris", "Nantes");
    map->road("Nantes", "Paris");  // Paris <-> Nantes
    map->road("Nice", "Nice");     // a ring road: a city that reaches itself
    map->road("Brest", "Nantes");  // no cycle through Brest
    std::printf("live cities: %d\n", g_live);
    ok &= expect(g_live == 6, "6 cities alive");

    std::printf("removing Brest from the map (nothing else refers to it)\n");
    map->cities.erase("Brest");
    ok &= expect(g_live == 5, "Brest freed at once by reference counting");

    std::printf("a collection now finds nothing: everything is reachable from `map`\n");
    ok &= expect(cyclegc::collect() == 0, "collect() found no garbage");

    std::printf("dropping the map\n");
    map = nullptr;
    std::printf("live cities: %d (the roads still form cycles)\n", g_live);
    ok &= expect(g_live == 5, "cycles keep 5 cities alive after the last outside reference");

    std::printf("collecting\n");
    auto found = cyclegc::collect();
    std::printf("collect() found %td unreachable objects\n", static_cast<std::ptrdiff_t>(found));
    ok &= expect(found == 5, "5 unreachable cities found");
    ok &= expect(g_live == 0, "every city freed");
    return ok ? 0 : 1;
}
