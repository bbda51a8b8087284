"""`iomimic offload init|status|recover`: Everest write off-loading on real files and devices."""

from __future__ import annotations

import argparse

from iomimic.cli import EXIT_OK
from iomimic.cli.args import Parser, count, subcommand, write_json


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, found {text!r}")
    return value


def register(subparsers) -> None:
    cmd = subparsers.add_parser(
        "offload",
        help="Everest write off-loading: set a volume up with stores, see its state, recover it.",
        description="Everest write off-loading on real files and devices: init | status | recover.",
    )
    actions = cmd.add_subparsers(dest="offload_command", metavar="ACTION", parser_class=Parser, required=True)

    p = subcommand(
        actions,
        "init",
        handle_init,
        "Set a base volume up to off-load its writes to stores (circular logs, created or checked "
        "under the write guard and formatted empty); the store set is written beside the base.",
        "  iomimic offload init --base /data/vol.dat --stores /ssd1/st.log,/ssd2/st.log --store-size 2G\n"
        "  iomimic offload init --base vol.dat --base-size 1G --stores a.log,b.log,c.log --store-size 64M "
        "--n-way 2 --replicas 2\n",
    )
    p.param_aliases = {"base_bytes": "base_size", "store_bytes": "store_size", "block_bytes": "block_size"}
    p.add_argument("--base", required=True, help="the base volume (file or block device)")
    p.add_argument("--stores", required=True, help="store files or partitions, comma-separated")
    p.add_argument("--store-size", required=True, help="each store's size (e.g. 2G)")
    p.add_argument("--base-size", help="create a missing base volume at this size")
    p.add_argument("--block-size", default="4k", help="the unit of off-loading (default 4k)")
    p.add_argument(
        "--mode",
        choices=["auto", "always", "never"],
        default="auto",
        help="off-load while the base is loaded (auto), always, or never (default auto)",
    )
    p.add_argument(
        "--loaded-iops", type=_positive, default=200.0, help="the base is loaded from this rate (default 200)"
    )
    p.add_argument(
        "--light-iops",
        type=_positive,
        default=50.0,
        help="a store is lightly loaded below this rate (default 50)",
    )
    p.add_argument("--n-way", type=count, default=1, help="stores to spread off-loads over (default 1)")
    p.add_argument("--replicas", type=count, default=1, help="stores each off-load is written to (default 1)")
    p.add_argument("--overwrite", action="store_true", help="allow writing files iomimic did not create")
    p.add_argument("--allow-device", action="store_true", help="allow block devices (never one in use)")
    p.add_argument("--json", metavar="PATH", help="write the store set as JSON (- for stdout only)")

    for name, handler, help_text, example in (
        (
            "status",
            handle_status,
            "Show a base volume's off-loaded ranges, versions, store use and reclaim progress "
            "(the state is rebuilt from the stores' logs; everything is opened read-only and nothing "
            "is written).",
            "  iomimic offload status /data/vol.dat\n  iomimic offload status vol.dat --json status.json\n",
        ),
        (
            "recover",
            handle_recover,
            "After a crash: rebuild the state from the store set and the stores' logs, and with "
            "--reclaim copy everything off-loaded home. A lost store is retired; when it held the only "
            "copy of some data this needs --accept-loss.",
            "  iomimic offload recover /data/vol.dat\n  iomimic offload recover vol.dat --reclaim\n",
        ),
    ):
        p = subcommand(actions, name, handler, help_text, example)
        p.add_argument("base", help="the base volume given to `offload init`")
        p.add_argument("--json", metavar="PATH", help="write the status as JSON (- for stdout only)")
        p.add_argument(
            "--accept-loss",
            action="store_true",
            help="go on without lost stores even when they held the only copy of some data "
            "(those ranges read back older data)",
        )
        if name == "recover":
            p.add_argument("--reclaim", action="store_true", help="copy all off-loaded data home now")


def handle_init(args: argparse.Namespace) -> int:
    from iomimic import offload
    from iomimic.report import make_console
    from iomimic.report.offload import render_store_set
    from iomimic.units import parse_size_bytes

    stores = [s for s in args.stores.split(",") if s]
    store_set = offload.init(
        args.base,
        stores,
        parse_size_bytes(args.store_size, "store_bytes"),
        base_size=None if args.base_size is None else parse_size_bytes(args.base_size, "base_bytes"),
        block_size=parse_size_bytes(args.block_size, "block_bytes"),
        overwrite=args.overwrite,
        allow_device=args.allow_device,
        mode=args.mode,
        loaded_iops=args.loaded_iops,
        light_iops=args.light_iops,
        n_way=args.n_way,
        replicas=args.replicas,
    )
    if args.json and write_json(args.json, store_set):
        return EXIT_OK
    render_store_set(args.base, store_set, make_console())
    return EXIT_OK


def _show(args: argparse.Namespace, status: dict, title: str) -> int:
    from iomimic.report import make_console
    from iomimic.report.offload import render_status

    if args.json and write_json(args.json, status):
        return EXIT_OK
    render_status(status, title, make_console())
    return EXIT_OK


def handle_status(args: argparse.Namespace) -> int:
    from iomimic import offload

    return _show(args, offload.status(args.base, accept_loss=args.accept_loss), f"off-loading of {args.base}")


def handle_recover(args: argparse.Namespace) -> int:
    from iomimic import offload

    v = offload.Volume(args.base, accept_loss=args.accept_loss)
    found = v.status()
    reclaimed = v.reclaim_all() if args.reclaim else 0
    status = v.status()
    status["recovered_blocks"] = found["offloaded_blocks"]
    status["reclaimed_now"] = reclaimed
    title = (
        f"recovered {args.base}: {found['offloaded_blocks']:,} off-loaded blocks found in the stores' logs"
    )
    if args.reclaim:
        title += f", {reclaimed:,} reclaimed home"
    return _show(args, status, title)
