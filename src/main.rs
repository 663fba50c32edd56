fn main() {
    println!("slurmdash");
}
