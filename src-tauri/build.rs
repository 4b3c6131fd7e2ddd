//! Build script of the desktop shell: checks the config, the permissions of the app's
//! commands and the capabilities that grant them.

fn main() {
    // Both folders sit beside the sources, not beside the root manifest where the config is.
    println!("cargo:rerun-if-changed=src-tauri/permissions");
    println!("cargo:rerun-if-changed=src-tauri/capabilities");
    let attributes = tauri_build::Attributes::new()
        .capabilities_path_pattern("./src-tauri/capabilities/**/*")
        .app_manifest(
            tauri_build::AppManifest::new()
                .permissions_path_pattern("./src-tauri/permissions/**/*"),
        );
    tauri_build::try_build(attributes).expect("tauri-build failed to check the app's config");
}
