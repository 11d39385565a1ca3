# A small stand-in for nixpkgs' `lib`: just what openfiles' package, modules, flake and
# eval tests use, with the same names and (simplified) semantics. It exists so the modules
# can be evaluated and `nix flake check` can run offline, where nixpkgs cannot be fetched.
# Not a general replacement: types do not type-check, and conflicting definitions of a
# single-valued option are an error only when they differ.
let
  b = builtins;

  id = x: x;
  isType = t: x: b.isAttrs x && (x._type or null) == t;
  isDerivation = x: b.isAttrs x && (x.type or null) == "derivation";
  isOption = isType "option";
  unique = l: b.foldl' (acc: x: if b.elem x acc then acc else acc ++ [ x ]) [ ] l;
  concatMap = f: l: b.concatLists (b.map f l);
  optional = c: x: if c then [ x ] else [ ];
  optionals = c: l: if c then l else [ ];
  optionalAttrs = c: a: if c then a else { };
  optionalString = c: s: if c then s else "";
  concatStringsSep = b.concatStringsSep;
  concatMapStringsSep = sep: f: l: b.concatStringsSep sep (b.map f l);
  mapAttrsToList = f: a: b.map (n: f n a.${n}) (b.attrNames a);
  filterAttrs = p: a: b.listToAttrs (b.filter (x: p x.name x.value) (mapAttrsToList (name: value: { inherit name value; }) a));
  genAttrs = names: f: b.listToAttrs (b.map (n: { name = n; value = f n; }) names);
  recursiveUpdate = l: r:
    l // b.mapAttrs (n: v: if b.isAttrs v && b.isAttrs (l.${n} or null) && !isDerivation v then recursiveUpdate l.${n} v else v) r;
  hasPrefix = p: s: b.substring 0 (b.stringLength p) s == p;
  hasSuffix = p: s:
    let lp = b.stringLength p; ls = b.stringLength s; in ls >= lp && b.substring (ls - lp) lp s == p;
  hasInfix = i: s: b.match ".*${escapeRegex i}.*" s != null;
  escapeRegex = s: b.replaceStrings [ "." "+" "*" "?" "(" ")" "[" "]" "{" "}" "|" "^" "$" "\\" ] [ "\\." "\\+" "\\*" "\\?" "\\(" "\\)" "\\[" "\\]" "\\{" "\\}" "\\|" "\\^" "\\$" "\\\\" ] s;
  escapeShellArg = s: "'${b.replaceStrings [ "'" ] [ "'\\''" ] (toString s)}'";
  boolToString = x: if x then "true" else "false";
  makeSearchPath = sub: pkgs: b.concatStringsSep ":" (b.map (p: "${p}/${sub}") pkgs);
  makeBinPath = makeSearchPath "bin";
  getExe = p: "${p}/bin/${p.meta.mainProgram or p.pname or (b.parseDrvName p.name).name}";

  # --- option declarations and definitions ---------------------------------------------
  mkOption = attrs: attrs // { _type = "option"; };
  mkEnableOption = name: mkOption { type = types.bool; default = false; description = "Whether to enable ${name}."; };
  mkPackageOption = pkgs: name: { default ? [ name ], ... }:
    mkOption { type = types.package; default = if b.isList default then b.foldl' (a: n: a.${n}) pkgs default else default; };
  mkIf = condition: content: { _type = "if"; inherit condition content; };
  mkMerge = contents: { _type = "merge"; inherit contents; };
  mkOverride = priority: content: { _type = "override"; inherit priority content; };
  mkDefault = mkOverride 1000;
  mkOptionDefault = mkOverride 1500;
  mkForce = mkOverride 50;
  mkAfter = x: x;
  mkBefore = x: x;
  literalExpression = text: { _type = "literalExpression"; inherit text; };
  literalMD = text: { _type = "literalMD"; inherit text; };

  mergeEqual = loc: values:
    let u = unique values; in
    if b.length u == 1 then b.head u
    else throw "The option `${loc}' has conflicting definition values: ${b.toJSON (b.map (v: if b.isAttrs v then "<attrs>" else v) u)}";

  mkType = name: merge: { _type = "option-type"; inherit name merge; };
  types = rec {
    bool = mkType "bool" mergeEqual;
    str = mkType "str" mergeEqual;
    lines = mkType "lines" (loc: vs: b.concatStringsSep "\n" vs);
    int = mkType "int" mergeEqual;
    port = int;
    path = mkType "path" mergeEqual;
    package = mkType "package" (loc: vs: b.elemAt vs (b.length vs - 1));
    enum = values: mkType "enum" mergeEqual;
    nullOr = t: mkType "nullOr ${t.name}" t.merge;
    either = a: c: mkType "either" (loc: vs: if b.all b.isAttrs vs then mergeFree vs else mergeEqual loc vs);
    oneOf = ts: mkType "oneOf" (loc: vs: if b.all b.isAttrs vs then mergeFree vs else mergeEqual loc vs);
    listOf = t: mkType "listOf ${t.name}" (loc: vs: b.concatLists vs);
    attrsOf = t: mkType "attrsOf ${t.name}" (loc: vs: mergeFree vs);
    lazyAttrsOf = attrsOf;
    attrs = mkType "attrs" (loc: vs: mergeFree vs);
    anything = mkType "anything" (loc: vs: if b.all b.isAttrs vs then mergeFree vs else if b.all b.isList vs then b.concatLists vs else mergeEqual loc vs);
    submodule = m: attrs;
  };

  # Definitions at an attribute-set level: flatten mkMerge and push mkIf/mkOverride down to
  # the attributes, so attribute names are known without forcing any condition (this is what
  # lets `config = mkIf cfg.enable {…}` refer to `config` without infinite recursion).
  pushDown = d:
    if isType "merge" d then concatMap pushDown d.contents
    else if isType "if" d then b.map (a: if isPlainAttrs a then b.mapAttrs (n: v: mkIf d.condition v) a else mkIf d.condition a) (pushDown d.content)
    else if isType "override" d then b.map (a: if isPlainAttrs a then b.mapAttrs (n: v: mkOverride d.priority v) a else mkOverride d.priority a) (pushDown d.content)
    else [ d ];

  # A leaf's definitions with conditions applied: a list of { priority, value }.
  discharge = d:
    if isType "merge" d then concatMap discharge d.contents
    else if isType "if" d then (if d.condition then discharge d.content else [ ])
    else if isType "override" d then b.map (x: x // { priority = d.priority; }) (discharge d.content)
    else [ { priority = 100; value = d; } ];

  isPlainAttrs = v: b.isAttrs v && !isDerivation v && !(v ? _type);

  # Values that win by priority (lowest number), in definition order.
  winners = defs:
    let
      all = concatMap discharge defs;
      best = b.foldl' (m: x: if x.priority < m then x.priority else m) 9999 all;
    in b.map (x: x.value) (b.filter (x: x.priority == best) all);

  # Merge definitions of an undeclared (freeform) attribute: attribute sets recursively,
  # lists concatenated, anything else must agree.
  present = d:
    if isType "merge" d then b.any present d.contents
    else if isType "if" d then d.condition && present d.content
    else if isType "override" d then present d.content
    else true;

  mergeFree = defs:
    let
      flat = concatMap pushDown defs;
      sub = n: concatMap (a: optional (a ? ${n}) a.${n}) flat;
    in
    if flat != [ ] && b.all isPlainAttrs flat then
      let names = b.filter (n: b.any present (sub n)) (unique (concatMap b.attrNames flat)); in
      genAttrs names (n: mergeFree (sub n))
    else
      let vs = winners defs; in
      if vs == [ ] then throw "no value defined"
      else if b.all isPlainAttrs vs then mergeFree vs
      else if b.all b.isList vs then b.concatLists vs
      else mergeEqual "<freeform>" vs;

  evalOption = loc: decl: defs:
    let vs = winners defs; in
    if vs == [ ] then
      (if decl ? default then decl.default else throw "The option `${loc}' is used but not defined.")
    else (decl.type or types.anything).merge loc vs;

  evalLevel = loc: decls: defs:
    let
      flat = concatMap pushDown defs;
      names = unique (b.attrNames decls ++ concatMap b.attrNames flat);
      sub = n: concatMap (a: optional (a ? ${n}) a.${n}) flat;
    in
    genAttrs names (n:
      let l = if loc == "" then n else "${loc}.${n}"; in
      if decls ? ${n} then
        (if isOption decls.${n} then evalOption l decls.${n} (sub n) else evalLevel l decls.${n} (sub n))
      else mergeFree (sub n));

  mergeDecls = a: c:
    a // b.mapAttrs (n: v: if a ? ${n} && !isOption v && !isOption a.${n} then mergeDecls a.${n} v else v) c;

  evalModules = { modules, specialArgs ? { } }:
    let
      args = { inherit lib config options; pkgs = specialArgs.pkgs or { }; } // specialArgs;
      load = m: if b.isPath m || b.isString m then import m else m;
      call = m: let f = load m; in if b.isFunction f then f args else f;
      collect = ms: concatMap (m: let r = call m; in [ r ] ++ collect (r.imports or [ ])) ms;
      norm = r:
        if r ? options || r ? config then { options = r.options or { }; config = r.config or { }; }
        else { options = { }; config = b.removeAttrs r [ "imports" "_file" "key" "meta" ]; };
      evaluated = b.map norm (collect modules);
      options = b.foldl' mergeDecls { } (b.map (m: m.options) evaluated);
      config = evalLevel "" options (b.map (m: m.config) evaluated);
    in
    { inherit config options; };

  # --- generators ------------------------------------------------------------------------
  generators = {
    # INI as home-manager renders systemd units (listsAsDuplicateKeys, bools as true/false).
    toINI = { listsAsDuplicateKeys ? false, mkKeyValue ? (k: v: "${k}=${toString v}") }: attrs:
      b.concatStringsSep "\n" (mapAttrsToList
        (section: kvs:
          "[${section}]\n" + b.concatStringsSep "" (concatMap
            (k: let v = kvs.${k}; in
              b.map (x: mkKeyValue k x + "\n") (if listsAsDuplicateKeys && b.isList v then v else [ v ]))
            (b.attrNames kvs)))
        attrs) + "\n";
  };

  # lib.fileset, the part the package uses: a file set is a list of paths; `toSource` copies
  # `root` keeping those paths, everything below them and the folders leading to them. Like
  # the real one, it refuses a path that does not exist or lies outside `root`.
  fileset = rec {
    unions = sets: { _type = "fileset"; paths = concatMap (s: if isType "fileset" s then s.paths else [ s ]) sets; };
    toSource = { root, fileset }:
      let
        set = if isType "fileset" fileset then fileset.paths else [ fileset ];
        paths = b.map toString set;
        r = toString root;
        bad = b.filter (p: !(b.pathExists p) || !(p == r || hasPrefix (r + "/") p)) paths;
        keep = p: type:
          let s = toString p; in
          b.any (f: s == f || hasPrefix (f + "/") s || (type == "directory" && hasPrefix (s + "/") f)) paths;
      in
      if bad != [ ] then throw "lib.fileset.toSource: missing or outside the root: ${b.toJSON bad}"
      else b.path { path = root; name = "source"; filter = keep; };
  };

  systems.flakeExposed = [ "x86_64-linux" "aarch64-linux" "x86_64-darwin" "aarch64-darwin" ];

  # home-manager adds `lib.hm`; the stub carries the part the module uses (its DAG entries,
  # built as home-manager's modules/lib/dag.nix builds them).
  hm.dag = rec {
    entryBetween = before: after: data: { inherit data before after; };
    entryAnywhere = entryBetween [ ] [ ];
    entryAfter = entryBetween [ ];
    entryBefore = before: entryBetween before [ ];
  };

  lib = {
    inherit id isDerivation optional optionals optionalAttrs optionalString concatStringsSep
      concatMapStringsSep mapAttrsToList filterAttrs genAttrs recursiveUpdate hasPrefix hasSuffix
      hasInfix escapeShellArg boolToString makeSearchPath makeBinPath getExe mkOption
      mkEnableOption mkPackageOption mkIf mkMerge mkOverride mkDefault mkOptionDefault mkForce mkAfter mkBefore
      literalExpression literalMD types evalModules generators systems hm unique concatMap;
    inherit (b) attrNames attrValues mapAttrs elem head toJSON fromJSON;
    cleanSource = src: src;
    cleanSourceWith = { src, filter ? (_: _: true), name ? "source" }:
      b.path { path = src; inherit filter name; };
    inherit fileset;
    platforms = { linux = [ "x86_64-linux" "aarch64-linux" ]; darwin = [ "x86_64-darwin" "aarch64-darwin" ]; unix = systems.flakeExposed; };
    licenses = { mit = { spdxId = "MIT"; }; asl20 = { spdxId = "Apache-2.0"; }; };
    maintainers = { };
    version = "stub";
  };
in
lib
