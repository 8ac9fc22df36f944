# gdb script (scripts/job-path.sh): step line by line from jobpath_begin to
# jobpath_end and record, at each stop inside crates/jobsys/src, the file,
# the function and the stack depth. Writes JSON to $OUT.
import gdb, json, os

gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("break jobpath_begin")
gdb.execute("run", to_string=True)
gdb.execute("finish", to_string=True)
core = "/crates/jobsys/src/"
stops = []
steps = 0
while True:
    frame = gdb.selected_frame()
    name = frame.name() or ""
    if "jobpath_end" in name:
        break
    sal = frame.find_sal()
    path = sal.symtab.fullname() if sal.symtab else ""
    if core in path:
        depth, f = 0, frame
        while f is not None:
            depth, f = depth + 1, f.older()
        stops.append([path.split(core, 1)[1], name, depth])
    steps += 1
    if steps > 500000:
        raise SystemExit("job-path: no jobpath_end after 500000 steps")
    gdb.execute("step", to_string=True)
json.dump({"steps": steps, "stops": stops}, open(os.environ["OUT"], "w"))
gdb.execute("kill")
