// cyclegc example: a leak hunt (docs/diagnostics.md walks through it).
//
// A dialog builds a window of widgets (children hold their parent: cycles,
// which the collector frees) and registers a click listener on the
// application's event bus. Closing the dialog forgets to unregister the
// listener: the bus keeps the listener, which keeps its button, whose
// parent keeps the window and all its widgets. Each dialog opened and
// closed leaks them all.
//
// The hunt: the growth report shows Widgets piling up; the retainer chain
// of one of them shows the bus holding it through the listener; a leak
// check around one open/close fails with the same chain; heap snapshots
// (--snapshots DIR: baseline, target and final around one dialog, and
// growth/s1..s4 one dialog apart) show it in Chrome DevTools or memlab. With --fixed the
// dialog unregisters its listener and nothing leaks.
//
//   leak_hunt [--fixed] [--snapshots DIR]
//
// Returns 0 when it found what it expected (the leak, or none with --fixed).
#include <cyclegc/cyclegc.hpp>
#include <cyclegc/diagnostics.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

namespace {

struct Widget : cyclegc::object {
    std::string name;
    cyclegc::ref<Widget> parent;
    std::vector<cyclegc::ref<Widget>> children;
    explicit Widget(std::string widget_name) : name(std::move(widget_name)) {}
    void trace(cyclegc::tracer &t) { t(parent, children); }
};

struct Listener : cyclegc::object {
    cyclegc::ref<Widget> target;  // the widget the listener updates
    explicit Listener(cyclegc::ref<Widget> widget) : target(std::move(widget)) {}
    void trace(cyclegc::tracer &t) { t(target); }
};

struct EventBus : cyclegc::object {
    std::vector<cyclegc::ref<Listener>> listeners;
    void trace(cyclegc::tracer &t) { t(listeners); }
    void remove(const cyclegc::ref<Listener> &listener) {
        listeners.erase(std::remove(listeners.begin(), listeners.end(), listener), listeners.end());
    }
};

cyclegc::ref<Widget> add_child(const cyclegc::ref<Widget> &parent, const char *name) {
    auto child = cyclegc::make<Widget>(name);
    child->parent = parent;
    parent->children.push_back(child);
    return child;
}

// A dialog: a window with a title, a list of 24 rows and two buttons.
class Dialog {
  public:
    explicit Dialog(const cyclegc::ref<EventBus> &bus) : bus_(bus), window_(cyclegc::make<Widget>("window")) {
        add_child(window_, "title");
        auto list = add_child(window_, "list");
        for (int row = 0; row < 24; ++row) add_child(list, "row");
        auto ok = add_child(window_, "ok button");
        add_child(window_, "cancel button");
        listener_ = cyclegc::make<Listener>(ok);
        bus_->listeners.push_back(listener_);
    }
    void close(bool fixed) {
        if (fixed) bus_->remove(listener_);  // the line the buggy version forgot
        listener_ = nullptr;
        window_ = nullptr;
    }

  private:
    cyclegc::ref<EventBus> bus_;
    cyclegc::ref<Widget> window_;
    cyclegc::ref<Listener> listener_;
};

void open_and_close(const cyclegc::ref<EventBus> &bus, bool fixed) {
    Dialog dialog(bus);
    dialog.close(fixed);
}

void print_growth(const char *when) {
    std::printf("growth %s:\n", when);
    for (const auto &line : cyclegc::diag::growth())
        std::printf("  %-28s %6td %+6td\n", line.type_name.c_str(), line.count, line.count_change);
}

void print_chain(const std::vector<cyclegc::diag::link> &chain) {
    for (size_t i = 0; i < chain.size(); ++i)
        std::printf("  %s%s (refcount %td, external %td)\n", i ? "-> " : "", chain[i].type_name.c_str(),
                    chain[i].refcount, chain[i].external);
}

void snapshot(const char *dir, const std::string &name) {
    if (!dir) return;
    std::string path = std::string(dir) + "/" + name + ".heapsnapshot";
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    if (cgc_diag_write_heapsnapshot(path.c_str()) == 0) std::printf("wrote %s\n", path.c_str());
}

// The hunt; returns whether it found a leak.
bool hunt(bool fixed, const char *snapshots) {
    auto bus = cyclegc::make<EventBus>();  // held by main: a root
    cyclegc::collect();
    print_growth("at start");

    // 1. The growth report: open and close the dialog a few times.
    for (int i = 0; i < 3; ++i) open_and_close(bus, fixed);
    cyclegc::collect();
    print_growth("after three dialogs");

    // 2. Who holds a leaked widget?
    auto chain = cyclegc::diag::retainer_chain_to_type(cyclegc::type_of<Widget>()->tp_name);
    std::printf("retainer chain of the nearest Widget:\n");
    print_chain(chain);

    // 3. A leak check around one dialog, as a test would write it.
    std::string report;
    {
        cyclegc::diag::leak_check scope([&](const std::string &text) { report = text; });
        open_and_close(bus, fixed);
    }
    std::printf("leak check: %s", report.empty() ? "no leak\n" : report.c_str());

    // 4. Three snapshots for DevTools / memlab: before, with the dialog open, after it closed.
    snapshot(snapshots, "baseline");
    Dialog dialog(bus);
    snapshot(snapshots, "target");
    dialog.close(fixed);
    cyclegc::collect();
    snapshot(snapshots, "final");
    // 5. Four more (growth/s1 .. s4), one more dialog each: what memlab's
    // unbound-growth analyses read.
    for (int i = 1; i <= 4; ++i) {
        open_and_close(bus, fixed);
        cyclegc::collect();
        snapshot(snapshots, "growth/s" + std::to_string(i));
    }

    return !chain.empty() && !report.empty();
}

}  // namespace

int main(int argc, char **argv) {
    bool fixed = false;
    const char *snapshots = nullptr;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--fixed")) fixed = true;
        else if (!std::strcmp(argv[i], "--snapshots") && i + 1 < argc) snapshots = argv[++i];
    }
    bool leaked = hunt(fixed, snapshots);
    cyclegc::collect();  // the bus is gone: what it leaked is garbage now
    std::printf("%s\n", leaked == !fixed ? "found what was expected" : "UNEXPECTED");
    return leaked == !fixed ? 0 : 1;
}
