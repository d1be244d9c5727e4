// Throwaway keys generated for these tests only (openssl genpkey); they sign nothing real.
enum JWTTestKeys {
    /// P-256 PKCS#8 PEM, like an APNs .p8 file.
    static let es256PEM = """
    -----BEGIN PRIVATE KEY-----
    MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgwSlvp0bYnemQSGsE
    G7K05d8tfFGh3bw5/L0GsdqbrgOhRANCAATsJFAJVYsibMCrCi8TlIpcSaC2bprW
    h+kW82hP1lLUhl7YszjfFvchtBtHH04/ZOxUtwieHwEdKbnGOoewOZtW
    -----END PRIVATE KEY-----
    """

    /// P-384 key: must be refused for ES256.
    static let p384PEM = """
    -----BEGIN PRIVATE KEY-----
    MIG2AgEAMBAGByqGSM49AgEGBSuBBAAiBIGeMIGbAgEBBDDX1xr/njAT70W64CB8
    wEhfs+JUTYnjDDDVzVu9v3hfxRdwXMIQSdN9OSiyhOG7DN+hZANiAAQW7y3cIqS6
    RMZVT8xbAH6B2pK+a+jCPMMC/liXHG9Djy9lP76X8UxY02V8OXnppjZHbQyaauon
    J5L3SIj7BS45i4t5Ct/qXEMnzYj/M/feCBVtR2Od7ekywYqYWZbgPrk=
    -----END PRIVATE KEY-----
    """

    /// RSA-2048 PKCS#8 PEM, like a Google service-account private_key.
    static let rsaPEM = """
    -----BEGIN PRIVATE KEY-----
    MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQC3vKUr2OHkKHh8
    ChqX/cN8FZWkZ7BuL82MDVeS7dpkNUmUoxMqG/CVq0C7XZTub3MuvDj1gnhk/MFn
    ZY5L6LTNHssnu4yV/nWzKSa4Vifm5u6Na6YzX30bDC60vTLwdmEGne1IInKXjebI
    A4yght0PUrlZbB4BhO01/IWFLLvhpdU14X60k1Z/WyWVeaysj5U0TmDToxk9fFW9
    ndtW0cHBvYsxNw7g41HW73XpPD0GSOfkWaKypGroSeiEMFTYuVDpd0kf+GLqAWkO
    FSjPafwIwTFoxlbvpmp/WEbD+buGHZxuzo09e/E2OQqWgXMcdUKebidrdwmr0U4X
    vibF6Af/AgMBAAECggEAM7eeymPG2aDmoQt7BtNABhpRP7CMAcfk1Iog31OiCFjT
    eEoap9yrcIV+t/6UYDTwt/P1GG38E3jtu3vjfMxor9/+ERYCcWnpmV947aQaoSzZ
    cucdJhK3tThNoUQsJXE8yE8Fris8FBq2HhCZscmkSZ7gWyJKo+TVnD+TGbRIwi+g
    WS2puASZ9GNtOkDBw12QmLOjsEgGN5I93NGGm209MIdKXJCFN6RqHvxBcpwVoZGb
    LwQNOBxg8DL0AIJGJekp3R6nyg5k9nBN9BVF6R+WUfYUIzA5/MSDezq6JxenEI6i
    PQ02FxsXrmTMS43FQj4n51dRcKD+0j6hEz6gJ9OvCQKBgQDfa9CEki0zpiZMtk7+
    prbmSyUAlXdTRVemhAyR640mRucMYTsrxJ94VVWCpMRr6Je8r2JFLweiTdwp/J0z
    IIYYi510SoPVQgF8jTKHZHhjm5vUfXchzujFpxC+Ij1HOluxUg+hVq7StWgubHyS
    FW2DReV1x2hRTrmDaRkvZYAl2wKBgQDSh3CYW3WN9LTfkLBq/grrsOJ72LO2GVUH
    KpaVBlotrvuz5XC5xEzRXlG9N1GNkI26lOKLrr/kq2qXXFB/CzYmx55lGG0PJoEQ
    NIODenAnJlnOFla6DC5eQMnojmS7WKdqP9J1jI1+SyFzl3Fnh2f5ABbGmMTbfAii
    CVaw7XlJrQKBgQC+YjsvnPiTuJOObxPlf97/Yy1G0Bb8iGxmYsPrXFPNOEIOlJQ9
    ebGCcwUI7KrMYUlb6f/NgIP61Go2BSNXu/FI3T/xJsYsZbCqmA9kvEKybpldewSX
    dJ96PiDQRJD/L0WPVqQnEZyrxRXf6WZFfajyYg9kS+Yi0vjWeCqT7uRCXQKBgQCs
    iiHmS/ag+++M1lkvprquhU5o76YBVOuRrv6wbf9UN3fD7QOgy9elM6bL611kJxdw
    1fqBPhu4vh/iot658CdWSv1un0EqTIU0EcXC6IKoI08wjrBPVBJgXrrbZG/79uFm
    O54xhpqj6dElmfVwQtIciU0hQCz+ML4mhn7NDCL+FQKBgGbBUvex9jE7ou09N80+
    Eso/lp7vtmjBYvdvJz/yPFyOIx7GmD3XKpAk/IB5VGzQg89bsSoclhSReRAexzC0
    kdwAY+v3zZkJ5499uBWhklYqWKp2jAaWhGCjJfjNvF8Gglkp3RwpBcWE3bLoskeJ
    zYIjZOlGiqVM5zCj2mfnhFLe
    -----END PRIVATE KEY-----
    """
}
