fn main() {
    std::process::exit(dprp::cli::main());
}
